/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * neuron: tracepoints (trace system "neuron").
 *
 * /sys/kernel/tracing/events/neuron/: jobs submitted to and completed by a
 * core, copies handed to a DMA engine and completed, job timeouts and
 * core or device resets. Every event names its device by PCI address.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM neuron

#if !defined(__NEURON_TRACE_H__) || defined(TRACE_HEADER_MULTI_READ)
#define __NEURON_TRACE_H__

#include <drm/drm_device.h>
#include <linux/device.h>
#include <linux/tracepoint.h>
#include <linux/types.h>

#include "neuron_drv.h"

TRACE_EVENT(neuron_submit,
	    TP_PROTO(struct neuron_device *ndev, u32 core, u64 seqno,
		     u32 num_bindings),
	    TP_ARGS(ndev, core, seqno, num_bindings),
	    TP_STRUCT__entry(__string(dev, dev_name(ndev->drm.dev))
			     __field(u32, core)
			     __field(u64, seqno)
			     __field(u32, num_bindings)),
	    TP_fast_assign(__assign_str(dev);
			   __entry->core = core;
			   __entry->seqno = seqno;
			   __entry->num_bindings = num_bindings;),
	    TP_printk("dev=%s core=%u seqno=%llu bindings=%u",
		      __get_str(dev), __entry->core, __entry->seqno,
		      __entry->num_bindings)
);

TRACE_EVENT(neuron_complete,
	    TP_PROTO(struct neuron_device *ndev, u32 core, u64 seqno,
		     u32 status, u64 cycles),
	    TP_ARGS(ndev, core, seqno, status, cycles),
	    TP_STRUCT__entry(__string(dev, dev_name(ndev->drm.dev))
			     __field(u32, core)
			     __field(u64, seqno)
			     __field(u32, status)
			     __field(u64, cycles)),
	    TP_fast_assign(__assign_str(dev);
			   __entry->core = core;
			   __entry->seqno = seqno;
			   __entry->status = status;
			   __entry->cycles = cycles;),
	    TP_printk("dev=%s core=%u seqno=%llu status=%#x cycles=%llu",
		      __get_str(dev), __entry->core, __entry->seqno,
		      __entry->status, __entry->cycles)
);

TRACE_EVENT(neuron_timeout,
	    TP_PROTO(struct neuron_device *ndev, u32 core, u64 seqno),
	    TP_ARGS(ndev, core, seqno),
	    TP_STRUCT__entry(__string(dev, dev_name(ndev->drm.dev))
			     __field(u32, core)
			     __field(u64, seqno)),
	    TP_fast_assign(__assign_str(dev);
			   __entry->core = core;
			   __entry->seqno = seqno;),
	    TP_printk("dev=%s core=%u seqno=%llu", __get_str(dev),
		      __entry->core, __entry->seqno)
);

TRACE_EVENT(neuron_reset,
	    TP_PROTO(struct neuron_device *ndev, int core, const char *reason),
	    TP_ARGS(ndev, core, reason),
	    TP_STRUCT__entry(__string(dev, dev_name(ndev->drm.dev))
			     __field(int, core)
			     __string(reason, reason)),
	    TP_fast_assign(__assign_str(dev);
			   __entry->core = core;
			   __assign_str(reason);),
	    TP_printk("dev=%s core=%d reason=%s", __get_str(dev),
		      __entry->core, __get_str(reason))
);

DECLARE_EVENT_CLASS(neuron_copy_class,
		    TP_PROTO(struct neuron_device *ndev, u32 engine,
			     u64 seqno, u64 bytes, int error),
		    TP_ARGS(ndev, engine, seqno, bytes, error),
		    TP_STRUCT__entry(__string(dev, dev_name(ndev->drm.dev))
				     __field(u32, engine)
				     __field(u64, seqno)
				     __field(u64, bytes)
				     __field(int, error)),
		    TP_fast_assign(__assign_str(dev);
				   __entry->engine = engine;
				   __entry->seqno = seqno;
				   __entry->bytes = bytes;
				   __entry->error = error;),
		    TP_printk("dev=%s engine=%u seqno=%llu bytes=%llu error=%d",
			      __get_str(dev), __entry->engine,
			      __entry->seqno, __entry->bytes,
			      __entry->error)
);

/* A copy was handed to a DMA engine (error is 0). */
DEFINE_EVENT(neuron_copy_class, neuron_copy,
	     TP_PROTO(struct neuron_device *ndev, u32 engine, u64 seqno,
		      u64 bytes, int error),
	     TP_ARGS(ndev, engine, seqno, bytes, error)
);

/* A copy completed, with 0 or a negative errno. */
DEFINE_EVENT(neuron_copy_class, neuron_copy_complete,
	     TP_PROTO(struct neuron_device *ndev, u32 engine, u64 seqno,
		      u64 bytes, int error),
	     TP_ARGS(ndev, engine, seqno, bytes, error)
);

#endif /* __NEURON_TRACE_H__ */

/* define_trace.h includes this file again, from this directory. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE neuron_trace
#include <trace/define_trace.h>
