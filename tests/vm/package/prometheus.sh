#!/bin/bash
# SPDX-License-Identifier: MIT
#
# neuron-monitor.service (from neuron-tools, enabled here as an operator
# would, with --interval in /etc/default/neuron-monitor) scraped by Debian's
# prometheus server on a loopback port. After a known workload (neuron-bench's
# submit section as a user in group render), Prometheus' HTTP API returns
# the values sysfs shows for every core (jobs, busy time) and DMA engine
# (bytes) of device 0, in a sample taken within the monitor's interval plus
# the scrape interval (and a scheduling allowance) after the workload ended.
set -euo pipefail

MONITOR_INTERVAL=2
SCRAPE_INTERVAL=1
SCHEDULING=3 # TCG guest on a shared host: the processes run late
PROM=127.0.0.1:9090
fail() { echo "prometheus: FAIL: $*" >&2; exit 1; }
note() { echo "prometheus: $*"; }

dev=/sys/class/accel/accel0/device/neuron
[ -d "$dev" ] || fail "no $dev"
bdf=$(basename "$(readlink -f /sys/class/accel/accel0/device)")

# The monitor, as the package installs it, enabled.
sed -i "s/^NEURON_MONITOR_ARGS=.*/NEURON_MONITOR_ARGS=\"--interval $MONITOR_INTERVAL\"/" \
	/etc/default/neuron-monitor
systemctl enable --now neuron-monitor.service
systemctl is-active --quiet neuron-monitor.service || fail "neuron-monitor.service is not active"
note "neuron-monitor.service: $(systemctl show -p ActiveState,User,DynamicUser neuron-monitor | tr '\n' ' ')"

# Debian's server, on loopback, as its user, scraping the monitor.
work=$(mktemp -d /var/tmp/prometheus-test.XXXXXX)
cat >"$work/prometheus.yml" <<EOF
global:
  scrape_interval: ${SCRAPE_INTERVAL}s
  scrape_timeout: 1s
scrape_configs:
  - job_name: neuron
    static_configs:
      - targets: ['127.0.0.1:9880']
EOF
mkdir "$work/tsdb"
chown -R prometheus: "$work"
runuser -u prometheus -- /usr/bin/prometheus --config.file="$work/prometheus.yml" \
	--storage.tsdb.path="$work/tsdb" --web.listen-address=$PROM --log.level=warn \
	>"$work/log" 2>&1 &
prom_pid=$!
cleanup() {
	kill "$prom_pid" 2>/dev/null || true
	wait "$prom_pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
note "$(/usr/bin/prometheus --version 2>&1 | head -n1)"

query() { # PROMQL: one line per series: metric core engine value timestamp
	curl -fsS "http://$PROM/api/v1/query" --data-urlencode "query=$1" |
		jq -r '.data.result[] | [.metric.__name__, (.metric.core // "-"),
			(.metric.engine // "-"), .value[1], .value[0]] | @tsv'
}

selector="{__name__=~\"neuron_core_jobs_total|neuron_core_busy_seconds_total|neuron_dma_bytes_total\",device=\"0\",pci_address=\"$bdf\"}"

# What sysfs shows, in the same form.
sysfs_values() {
	local c e n
	n=$(cat "$dev/cores")
	for ((c = 0; c < n; c++)); do
		printf 'neuron_core_jobs_total\t%s\t-\t%s\n' "$c" "$(cat "$dev/core$c/jobs")"
		printf 'neuron_core_busy_seconds_total\t%s\t-\t%s\n' "$c" \
			"$(awk -v ns="$(cat "$dev/core$c/busy_ns")" 'BEGIN { printf "%.9f", ns / 1e9 }')"
	done
	n=$(cat "$dev/dma_engines")
	for ((e = 0; e < n; e++)); do
		printf 'neuron_dma_bytes_total\t-\t%s\t%s\n' "$e" "$(cat "$dev/dma$e/bytes")"
	done
}

# Prometheus' latest sample of every series equals sysfs; prints the
# oldest sample's timestamp.
matches() {
	local want got
	want=$(sysfs_values | sort)
	got=$(query "$selector") || return 1
	[ -n "$got" ] || return 1
	awk -F'\t' -v want="$want" '
		BEGIN { n = split(want, w, "\n"); for (i = 1; i <= n; i++) { split(w[i], f, "\t"); v[f[1] " " f[2] " " f[3]] = f[4] } }
		{ k = $1 " " $2 " " $3; if (!(k in v)) exit 1
		  d = $4 - v[k]; if (d < 0) d = -d; if (d > 1e-9 * (1 + v[k])) exit 1
		  seen[k] = 1; if (oldest == "" || $5 < oldest) oldest = $5 }
		END { for (k in v) if (!(k in seen)) exit 1; printf "%.3f\n", oldest }
	' <<<"$got"
}

# Prometheus is up and has the device's series.
for ((i = 0; i < 600; i++)); do
	up=$(query 'up{job="neuron"}' 2>/dev/null | cut -f4) || true
	[ "$up" = 1 ] && [ -n "$(query "$selector" 2>/dev/null)" ] && break
	sleep 0.1
done
[ "${up:-}" = 1 ] || fail "Prometheus never scraped neuron-monitor (up=${up:-none}): $(cat "$work/log")"
note "Prometheus scrapes neuron-monitor"

jobs_before=$(awk '{ s += $1 } END { print s }' "$dev"/core*/jobs)
(cd /tmp && runuser -u alice -- neuron-bench --quick --repeat 1 --sections submit >/dev/null) ||
	fail "the workload (neuron-bench --sections submit as alice) failed"
done_at=$(date +%s.%N)
jobs_after=$(awk '{ s += $1 } END { print s }' "$dev"/core*/jobs)
[ "$jobs_after" -gt "$jobs_before" ] || fail "the workload ran no jobs ($jobs_before -> $jobs_after)"
note "workload: $((jobs_after - jobs_before)) jobs on device 0 ($bdf)"

bound=$((MONITOR_INTERVAL + SCRAPE_INTERVAL + SCHEDULING))
stamp=
for ((i = 0; i < (bound + 10) * 5; i++)); do
	stamp=$(matches) && break
	stamp=
	sleep 0.2
done
if [ -z "$stamp" ]; then
	echo "sysfs:"; sysfs_values
	echo "Prometheus:"; query "$selector"
	fail "Prometheus never returned the values sysfs shows"
fi
lag=$(awk -v a="$done_at" -v b="$stamp" 'BEGIN { printf "%.2f", b - a }')
note "Prometheus returns the sysfs values in a sample $lag s after the workload (bound $bound s):"
query "$selector" | cut -f1-4
awk -v l="$lag" -v b="$bound" 'BEGIN { exit !(l <= b) }' ||
	fail "the matching sample is $lag s after the workload, more than $bound s"

# PromQL over the series: the jobs of the workload, per the server.
delta=$(query "sum(max_over_time(neuron_core_jobs_total{device=\"0\"}[5m]) - min_over_time(neuron_core_jobs_total{device=\"0\"}[5m]))" | cut -f4)
[ "$delta" = "$((jobs_after - jobs_before))" ] ||
	fail "Prometheus counts $delta jobs in the last 5 minutes, sysfs $((jobs_after - jobs_before))"
note "PromQL: $delta jobs in the last 5 minutes, as sysfs; ok"
