// SPDX-License-Identifier: MIT
// Mapping onto one NeuronCore (docs/examples.md has the details):
//
// * Token-major tiles [seq partitions, features] for everything that
//   reduces over features (LayerNorm: REDUCE over the free axis) or over
//   keys (softmax), and for the residual stream.
// * Feature-major tiles [128 features, seq] (x^T) as matmul operands: the
//   contraction runs over partitions, 128 at a time, accumulating in PSUM.
//   Q^T, K^T and the MLP's hidden layer come out feature-major, so their
//   biases are per-partition operands of the ACTIVATE that evacuates PSUM
//   (with GELU fused for the MLP); V, the attention projection and the MLP
//   output come out token-major, where the bias is a broadcast row added
//   on the Vector engine together with the residual.
// * Softmax per head: scores S = Q_h K_h^T in PSUM; REDUCE max; TENSOR_SCALAR
//   -max/sqrt(d_head); ACTIVATE exp(S/sqrt(d_head) - max/sqrt(d_head)) read
//   straight from PSUM; REDUCE sum; TENSOR_SCALAR 1/sum; TENSOR_SCALAR
//   multiply; TRANSPOSE P so keys are on partitions; O_h^T = V_h^T P^T lands
//   feature-major, which is what the output projection contracts over.
// * LayerNorm: REDUCE sum -> mean, centre, square, REDUCE sum -> variance,
//   and 1/sqrt(var + eps) without a square-root instruction: the integer
//   reinterpretation estimate (0x5f3759df - bits/2, computed on the fp32
//   and int32 views of the same SBUF bytes) refined by three Newton steps
//   y <- y (1.5 - 0.5 v y^2), which reach fp32 precision.
// * PSUM: eight 2 KiB banks used round robin; Kernel inserts the waits that
//   keep a bank from being overwritten before its reader has run.
#include "common/transformer_block.hpp"

#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <neuron/builder.hpp>
#include <neuron/compiler/compile.hpp>

#include "neuron_isa.h"

namespace nex {

using namespace neuron;

namespace {

std::vector<float> uniform(Rng &rng, size_t n, float a, float centre = 0.0f) {
    std::vector<float> v(n);
    for (auto &x : v)
        x = centre + rng.uniform(a);
    return v;
}

} // namespace

TransformerParams transformer_params(const TransformerShape &s, Rng &rng) {
    const size_t D = s.d_model, F = s.d_ff;
    const float ad = 1.0f / std::sqrt(static_cast<float>(D));
    const float af = 1.0f / std::sqrt(static_cast<float>(F));
    TransformerParams p;
    p.ln1_g = uniform(rng, D, 0.1f, 1.0f);
    p.ln1_b = uniform(rng, D, 0.1f);
    p.wq = uniform(rng, D * D, ad);
    p.bq = uniform(rng, D, ad);
    p.wk = uniform(rng, D * D, ad);
    p.bk = uniform(rng, D, ad);
    p.wv = uniform(rng, D * D, ad);
    p.bv = uniform(rng, D, ad);
    p.wo = uniform(rng, D * D, ad);
    p.bo = uniform(rng, D, ad);
    p.ln2_g = uniform(rng, D, 0.1f, 1.0f);
    p.ln2_b = uniform(rng, D, 0.1f);
    p.w1 = uniform(rng, D * F, ad);
    p.b1 = uniform(rng, F, ad);
    p.w2 = uniform(rng, F * D, af);
    p.b2 = uniform(rng, D, af);
    return p;
}

Program build_transformer_block(const TransformerShape &s, const TransformerParams &p,
                                Kernel::Stats *stats) {
    const uint32_t P = 128, S = s.seq, D = s.d_model, H = s.heads, F = s.d_ff;
    if (S == 0 || S > P || D == 0 || D % P || D > 512 || F == 0 || F % P || H == 0 || D % H ||
        P % (D / H))
        throw std::invalid_argument(fmt::format(
            "transformer_block: need seq 1..128, d_model a multiple of 128 up to 512, d_ff a "
            "multiple of 128 and d_head = d_model / heads dividing 128 (got {}, {}, {}, {})",
            S, D, H, F));
    if (s.post_norm)
        throw std::invalid_argument("transformer_block: the hand-written program is the pre-norm "
                                    "block; compile transformer_block_graph() for post-norm");
    const uint32_t DH = D / H, KD = D / P, KF = F / P;
    const auto fp32 = DType::fp32;
    const float scale = 1.0f / std::sqrt(static_cast<float>(DH));

    ProgramBuilder b(fmt::format("transformer_block_s{}_d{}_h{}_ff{}", S, D, H, F));
    auto x = b.argument("x", fp32, {1, S, D}, Direction::in);
    auto y = b.argument("y", fp32, {1, S, D}, Direction::out);
    auto c_ln1_g = b.constant("ln1.weight", {D}, p.ln1_g);
    auto c_ln1_b = b.constant("ln1.bias", {D}, p.ln1_b);
    auto c_wq = b.constant("attn.wq", {D, D}, p.wq);
    auto c_bq = b.constant("attn.bq", {D}, p.bq);
    auto c_wk = b.constant("attn.wk", {D, D}, p.wk);
    auto c_bk = b.constant("attn.bk", {D}, p.bk);
    auto c_wv = b.constant("attn.wv", {D, D}, p.wv);
    auto c_bv = b.constant("attn.bv", {D}, p.bv);
    auto c_wo = b.constant("attn.wo", {D, D}, p.wo);
    auto c_bo = b.constant("attn.bo", {D}, p.bo);
    auto c_ln2_g = b.constant("ln2.weight", {D}, p.ln2_g);
    auto c_ln2_b = b.constant("ln2.bias", {D}, p.ln2_b);
    auto c_w1 = b.constant("mlp.w1", {D, F}, p.w1);
    auto c_b1 = b.constant("mlp.b1", {F}, p.b1);
    auto c_w2 = b.constant("mlp.w2", {F, D}, p.w2);
    auto c_b2 = b.constant("mlp.b2", {D}, p.b2);

    Kernel k(b);
    const uint32_t bank_elems = NEURON_PSUM_BANK_SIZE / 4;
    Tile acc = b.psum("acc", fp32, NEURON_PSUM_BANKS * bank_elems);
    uint32_t next_bank = 0;
    auto psum = [&](uint32_t parts, uint32_t n) {
        Tap t = acc.partitions(0, parts).view(next_bank * bank_elems, n);
        next_bank = (next_bank + 1) % NEURON_PSUM_BANKS;
        return t;
    };

    // --- loads, in the order the computation needs them ---
    // Each part is named (its instructions' origin) like the PyTorch
    // module's, so that a profile names the part an instruction is for.
    k.set_origin("load");
    Tile xs = b.sbuf("x", fp32, D, S);
    k.dma_load(xs.tap(), x.at(0, D * 4));
    // A [D] vector repeated on every token's partition (part_stride 0).
    auto row = [&](const std::string &name, const ArgRef &a) {
        Tile t = b.sbuf(name, fp32, D, S);
        k.dma_load(t.tap(), a.at(0, 0));
        return t;
    };
    // A [n] vector as [128, n/128]: feature f on partition f % 128.
    auto column = [&](const std::string &name, const ArgRef &a, uint32_t n) {
        Tile t = b.sbuf(name, fp32, n / P);
        k.dma_load(t.tap(), a.at(0, 4, P * 4));
        return t;
    };
    // A weight [in, out] as in/128 row blocks side by side: [in % 128, kb * out + o].
    auto weight = [&](const std::string &name, const ArgRef &a, uint32_t in, uint32_t out) {
        Tile t = b.sbuf(name, fp32, in / P * out);
        for (uint32_t kb = 0; kb < in / P; kb++)
            k.dma_load(t.view(kb * out, out), a.at(uint64_t{kb} * P * out * 4, out * 4));
        return t;
    };
    Tile ln1_g = row("ln1_g", c_ln1_g), ln1_b = row("ln1_b", c_ln1_b);
    Tile wq = weight("wq", c_wq, D, D), bq = column("bq", c_bq, D);
    Tile wk = weight("wk", c_wk, D, D), bk = column("bk", c_bk, D);
    Tile wv = weight("wv", c_wv, D, D), bv = row("bv", c_bv);
    Tile wo = weight("wo", c_wo, D, D), bo = row("bo", c_bo);
    Tile ln2_g = row("ln2_g", c_ln2_g), ln2_b = row("ln2_b", c_ln2_b);
    Tile w1 = weight("w1", c_w1, D, F), b1 = column("b1", c_b1, F);
    Tile w2 = weight("w2", c_w2, F, D), b2 = row("b2", c_b2);

    // --- LayerNorm over the free axis of a token-major [S, D] tile ---
    auto layer_norm = [&](const std::string &n, const Tile &v, const Tile &g, const Tile &beta,
                          const Tile &out) {
        Tile sum = b.sbuf(n + ".sum", fp32, 1, S), mean = b.sbuf(n + ".mean", fp32, 1, S);
        Tile var = b.sbuf(n + ".var", fp32, 1, S), t = b.sbuf(n + ".newton", fp32, 1, S);
        Tile est = b.sbuf(n + ".rstd", DType::int32, 1, S);
        Tile xc = b.sbuf(n + ".centred", fp32, D, S), sq = b.sbuf(n + ".squares", fp32, D, S);
        Tile xn = b.sbuf(n + ".normed", fp32, D, S);
        const float inv_d = 1.0f / static_cast<float>(D);
        k.reduce(ReduceOp::sum, sum.tap(), v.tap());
        k.tensor_scalar(Engine::vector, mean.tap(), sum.tap(), AluOp::mul, inv_d);
        k.tensor_scalar(Engine::vector, xc.tap(), v.tap(), AluOp::sub, mean.tap());
        k.tensor_tensor(AluOp::mul, sq.tap(), xc.tap(), xc.tap());
        k.reduce(ReduceOp::sum, var.tap(), sq.tap());
        k.tensor_scalar(Engine::vector, var.tap(), var.tap(), AluOp::mul, inv_d, AluOp::add, s.eps);
        // 1/sqrt(var): estimate from the bits, then Newton.
        k.tensor_scalar(Engine::vector, est.tap(), var.as(DType::int32).tap(), AluOp::mul, 0.5f,
                        AluOp::sub, static_cast<float>(0x5f3759df), false, /*reverse1=*/true);
        Tile r = est.as(fp32);
        for (int it = 0; it < 3; it++) {
            k.tensor_tensor(AluOp::mul, t.tap(), r.tap(), r.tap());
            k.tensor_tensor(AluOp::mul, t.tap(), t.tap(), var.tap());
            k.tensor_scalar(Engine::vector, t.tap(), t.tap(), AluOp::mul, -0.5f, AluOp::add, 1.5f);
            k.tensor_tensor(AluOp::mul, r.tap(), r.tap(), t.tap());
        }
        k.tensor_scalar(Engine::scalar, xn.tap(), xc.tap(), AluOp::mul, r.tap());
        k.tensor_tensor(AluOp::mul, xn.tap(), xn.tap(), g.tap());
        k.tensor_tensor(AluOp::add, out.tap(), xn.tap(), beta.tap());
    };
    // Token-major [S, n] -> feature-major [128, n/128 * S].
    auto transpose_in = [&](const std::string &name, const Tile &v, uint32_t n) {
        Tile t = b.sbuf(name, fp32, n / P * S);
        for (uint32_t kb = 0; kb < n / P; kb++)
            k.transpose(t.view(kb * S, S), v.view(kb * P, P));
        return t;
    };

    // --- attention ---
    Tile a1 = b.sbuf("ln1_out", fp32, D, S);
    k.set_origin("ln1");
    layer_norm("ln1", xs, ln1_g, ln1_b, a1);
    Tile xb = b.sbuf("x_plus_bo", fp32, D, S); // residual + output bias, off the critical path
    k.set_origin("residual1");
    k.tensor_tensor(AluOp::add, xb.tap(), xs.tap(), bo.tap());
    k.set_origin("ln1");
    Tile a1t = transpose_in("ln1_out_t", a1, D);

    // Q^T, K^T: [128 features, S] per block of 128 features, bias per partition.
    auto project_t = [&](const std::string &name, const Tile &w, const Tile &bias) {
        Tile t = b.sbuf(name, fp32, KD * S);
        for (uint32_t g = 0; g < KD; g++) {
            Tap bank = psum(P, S);
            for (uint32_t kb = 0; kb < KD; kb++)
                k.matmul(bank, w.view(kb * D + g * P, P), a1t.view(kb * S, S), kb > 0);
            k.activate(Activation::identity, t.view(g * S, S), bank, 1.0f, bias.view(g, 1));
        }
        return t;
    };
    k.set_origin("attn.q");
    Tile qt = project_t("q_t", wq, bq);
    k.set_origin("attn.k");
    Tile kt = project_t("k_t", wk, bk);
    k.set_origin("attn.v");
    // V: token-major [S, D], bias as a broadcast row.
    Tile v = b.sbuf("v", fp32, D, S);
    {
        Tap bank = psum(S, D);
        for (uint32_t kb = 0; kb < KD; kb++)
            k.matmul(bank, a1t.view(kb * S, S), wv.view(kb * D, D), kb > 0);
        k.tensor_tensor(AluOp::add, v.tap(), bank, bv.tap());
    }
    // Scores of every head first, so the Tensor engine has work while the
    // softmax of the first head runs.
    std::vector<Tap> scores;
    k.set_origin("attn.scores");
    for (uint32_t h = 0; h < H; h++) {
        uint32_t g = h * DH / P, p0 = h * DH % P;
        Tap bank = psum(S, S);
        k.matmul(bank, qt.partitions(p0, DH).view(g * S, S), kt.partitions(p0, DH).view(g * S, S),
                 false);
        scores.push_back(bank);
    }
    Tile attn_t = b.sbuf("attn_t", fp32, KD * S); // concat of heads, feature-major
    Tap out_bank = psum(P, KD * S);
    Tile ot_tile{Space::psum, fp32, 0, P, out_bank.offset, KD * S};
    for (uint32_t h = 0; h < H; h++) {
        uint32_t g = h * DH / P, p0 = h * DH % P;
        std::string n = fmt::format("head{}", h);
        k.set_origin("attn.softmax");
        Tile m = b.sbuf(n + ".max", fp32, 1, S), nm = b.sbuf(n + ".bias", fp32, 1, S);
        Tile l = b.sbuf(n + ".sum", fp32, 1, S), r = b.sbuf(n + ".recip", fp32, 1, S);
        Tile e = b.sbuf(n + ".exp", fp32, S, S), pr = b.sbuf(n + ".probs", fp32, S, S);
        Tile pt = b.sbuf(n + ".probs_t", fp32, S, S);
        k.reduce(ReduceOp::max, m.tap(), scores[h]);
        k.tensor_scalar(Engine::vector, nm.tap(), m.tap(), AluOp::mul, -scale);
        k.activate(Activation::exp, e.tap(), scores[h], scale, nm.tap());
        k.reduce(ReduceOp::sum, l.tap(), e.tap());
        k.tensor_scalar(Engine::vector, r.tap(), l.tap(), AluOp::div, 1.0f, AluOp::none, 0.0f,
                        /*reverse0=*/true);
        k.tensor_scalar(Engine::scalar, pr.tap(), e.tap(), AluOp::mul, r.tap());
        k.transpose(pt.tap(), pr.tap()); // [keys, queries]
        // O_h^T [d_head, S] = V_h^T P^T, contraction over the keys.
        k.set_origin("attn.pv");
        Tap ot = ot_tile.partitions(p0, DH).view(g * S, S);
        k.matmul(ot, v.view(h * DH, DH), pt.tap(), false);
        k.copy(Engine::scalar, attn_t.partitions(p0, DH).view(g * S, S), ot);
    }
    // Output projection, token-major, + bias + residual.
    Tile hs = b.sbuf("h", fp32, D, S);
    k.set_origin("attn.out");
    {
        Tap bank = psum(S, D);
        for (uint32_t g = 0; g < KD; g++)
            k.matmul(bank, attn_t.view(g * S, S), wo.view(g * D, D), g > 0);
        k.tensor_tensor(AluOp::add, hs.tap(), bank, xb.tap());
    }

    // --- MLP ---
    Tile a2 = b.sbuf("ln2_out", fp32, D, S);
    k.set_origin("ln2");
    layer_norm("ln2", hs, ln2_g, ln2_b, a2);
    Tile hb = b.sbuf("h_plus_b2", fp32, D, S);
    k.set_origin("residual2");
    k.tensor_tensor(AluOp::add, hb.tap(), hs.tap(), b2.tap());
    k.set_origin("ln2");
    Tile a2t = transpose_in("ln2_out_t", a2, D);
    Tile gt = b.sbuf("mlp_hidden_t", fp32, KF * S); // GELU(a2 W1 + b1)^T
    k.set_origin("mlp.fc1+gelu");
    for (uint32_t m = 0; m < KF; m++) {
        Tap bank = psum(P, S);
        for (uint32_t kb = 0; kb < KD; kb++)
            k.matmul(bank, w1.view(kb * F + m * P, P), a2t.view(kb * S, S), kb > 0);
        k.activate(Activation::gelu, gt.view(m * S, S), bank, 1.0f, b1.view(m, 1));
    }
    Tile ys = b.sbuf("y", fp32, D, S);
    k.set_origin("mlp.fc2");
    {
        Tap bank = psum(S, D);
        for (uint32_t m = 0; m < KF; m++)
            k.matmul(bank, gt.view(m * S, S), w2.view(m * D, D), m > 0);
        k.tensor_tensor(AluOp::add, ys.tap(), bank, hb.tap());
    }
    k.set_origin("store");
    k.dma_store(y.at(0, D * 4), ys.tap());
    k.set_origin("");
    k.finish();
    if (stats)
        *stats = k.stats();
    return b.finish();
}

namespace {

using Mat = std::vector<double>; // row-major

void layer_norm_ref(const Mat &v, size_t rows, size_t n, const std::vector<float> &g,
                    const std::vector<float> &beta, double eps, Mat &out) {
    out.resize(rows * n);
    for (size_t r = 0; r < rows; r++) {
        const double *x = &v[r * n];
        double mean = 0, var = 0;
        for (size_t j = 0; j < n; j++)
            mean += x[j];
        mean /= static_cast<double>(n);
        for (size_t j = 0; j < n; j++)
            var += (x[j] - mean) * (x[j] - mean);
        var /= static_cast<double>(n);
        double rstd = 1.0 / std::sqrt(var + eps);
        for (size_t j = 0; j < n; j++)
            out[r * n + j] = (x[j] - mean) * rstd * g[j] + beta[j];
    }
}

// out[rows, m] = a[rows, n] w[n, m] + bias[m]
void linear_ref(const Mat &a, size_t rows, size_t n, const std::vector<float> &w, size_t m,
                const std::vector<float> &bias, Mat &out) {
    out.assign(rows * m, 0.0);
    for (size_t r = 0; r < rows; r++) {
        double *o = &out[r * m];
        for (size_t j = 0; j < m; j++)
            o[j] = bias[j];
        for (size_t i = 0; i < n; i++) {
            double av = a[r * n + i];
            const float *wr = &w[i * m];
            for (size_t j = 0; j < m; j++)
                o[j] += av * wr[j];
        }
    }
}

} // namespace

std::vector<double> transformer_block_reference(const TransformerShape &s, std::span<const float> x,
                                                const TransformerParams &p) {
    const size_t S = s.seq, D = s.d_model, H = s.heads, DH = s.d_head(), F = s.d_ff;
    Mat xv(x.begin(), x.end()), a, q, kk, v, attn(S * D), proj, h(S * D), n1, u, mlp, y(S * D);
    // Pre-norm: attention and MLP read the normalised residual stream;
    // post-norm: they read the stream, and the sums are normalised.
    const Mat *att_in = &xv;
    if (!s.post_norm) {
        layer_norm_ref(xv, S, D, p.ln1_g, p.ln1_b, s.eps, a);
        att_in = &a;
    }
    linear_ref(*att_in, S, D, p.wq, D, p.bq, q);
    linear_ref(*att_in, S, D, p.wk, D, p.bk, kk);
    linear_ref(*att_in, S, D, p.wv, D, p.bv, v);
    const double scale = 1.0 / std::sqrt(static_cast<double>(DH));
    std::vector<double> sc(S);
    for (size_t hd = 0; hd < H; hd++)
        for (size_t i = 0; i < S; i++) {
            double mx = -INFINITY, sum = 0;
            for (size_t j = 0; j < S; j++) {
                double d = 0;
                for (size_t c = 0; c < DH; c++)
                    d += q[i * D + hd * DH + c] * kk[j * D + hd * DH + c];
                sc[j] = d * scale;
                mx = std::max(mx, sc[j]);
            }
            for (size_t j = 0; j < S; j++) {
                sc[j] = std::exp(sc[j] - mx);
                sum += sc[j];
            }
            for (size_t c = 0; c < DH; c++) {
                double o = 0;
                for (size_t j = 0; j < S; j++)
                    o += sc[j] * v[j * D + hd * DH + c];
                attn[i * D + hd * DH + c] = o / sum;
            }
        }
    linear_ref(attn, S, D, p.wo, D, p.bo, proj);
    for (size_t i = 0; i < S * D; i++)
        h[i] = xv[i] + proj[i];
    const Mat *mlp_in = &h;
    if (s.post_norm) {
        layer_norm_ref(h, S, D, p.ln1_g, p.ln1_b, s.eps, n1);
        mlp_in = &n1;
    } else {
        layer_norm_ref(h, S, D, p.ln2_g, p.ln2_b, s.eps, a);
        mlp_in = &a;
    }
    linear_ref(*mlp_in, S, D, p.w1, F, p.b1, u);
    for (auto &e : u)
        e = 0.5 * e * (1.0 + std::erf(e / std::sqrt(2.0)));
    linear_ref(u, S, F, p.w2, D, p.b2, mlp);
    const Mat &res = s.post_norm ? n1 : h;
    for (size_t i = 0; i < S * D; i++)
        y[i] = res[i] + mlp[i];
    if (s.post_norm) {
        Mat out;
        layer_norm_ref(y, S, D, p.ln2_g, p.ln2_b, s.eps, out);
        return out;
    }
    return y;
}

Tolerance transformer_block_tolerance() {
    // No single instruction's bound composes cleanly through LayerNorm,
    // softmax and four matmul layers; the measured error is ~1e-6 on
    // outputs of magnitude ~1 (docs/examples.md), so 1e-5 |ref| + 1e-5
    // leaves an order of magnitude of margin while still catching any
    // real mistake (a wrong element, a missed accumulation, a race).
    return Tolerance{1e-5, 1e-5};
}

namespace {

// The case of a block or layer whatever builds its program (@build, from
// the parameters, returns the Case holding it): the data, drawn from one
// generator in one order, the reference and the check are the same.
template <typename Build>
Case block_case(uint64_t seed, const TransformerShape &s, std::string title, Tolerance tol,
                Build build) {
    Rng rng(seed);
    std::vector<float> x(size_t{s.seq} * s.d_model);
    for (auto &v : x)
        v = rng.uniform(1.0f);
    TransformerParams p = transformer_params(s, rng);

    Case c = build(p);
    c.title = std::move(title);
    c.inputs.emplace_back("x", pack(DType::fp32, x));
    c.output = std::string("y");
    c.output_dtype = DType::fp32;
    auto t0 = std::chrono::steady_clock::now();
    c.reference = transformer_block_reference(s, x, p);
    c.reference_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    c.tolerance = tol;
    const uint64_t S = s.seq, D = s.d_model, F = s.d_ff;
    c.flops = 2 * S * D * D * 4 + 2 * S * S * D * 2 + 2 * S * D * F * 2;
    return c;
}

// The case of the block or layer compiled from transformer_block_graph.
Case compiled_case(uint64_t seed, const TransformerShape &s, std::string title, Tolerance tol) {
    return block_case(seed, s, std::move(title), tol, [&](const TransformerParams &p) {
        compiler::Compiled compiled = compiler::compile(transformer_block_graph(s, p));
        Case c(compiled.program);
        c.stats = compiled.stats;
        return c;
    });
}

} // namespace

Case transformer_block_case(uint64_t seed, const TransformerShape &s) {
    return block_case(seed, s,
                      fmt::format("transformer block (seq {}, d_model {}, {} heads, d_ff {}), fp32",
                                  s.seq, s.d_model, s.heads, s.d_ff),
                      transformer_block_tolerance(), [&](const TransformerParams &p) {
                          Kernel::Stats stats;
                          Case c(build_transformer_block(s, p, &stats));
                          c.stats = stats;
                          return c;
                      });
}

compiler::Graph transformer_block_graph(const TransformerShape &s, const TransformerParams &p) {
    using namespace neuron::compiler;
    const int64_t S = s.seq, D = s.d_model, H = s.heads, DH = s.d_head(), F = s.d_ff;
    if (S == 0 || D == 0 || H == 0 || F == 0 || D % H)
        throw std::invalid_argument(
            fmt::format("transformer_block_graph: need sizes >= 1 and heads dividing d_model (got "
                        "seq {}, d_model {}, {} heads, d_ff {})",
                        S, D, H, F));
    Graph g(fmt::format("{}_s{}_d{}_h{}_ff{}", s.post_norm ? "encoder_layer" : "transformer_block",
                        S, D, H, F));
    const auto fp32 = DType::fp32;
    auto c = [&](const std::string &name, Shape shape, const std::vector<float> &v) {
        return g.constant(name, Type{fp32, std::move(shape)}, ConstantInit{v, {}, 1.0f});
    };
    auto dims = [](Shape d) {
        Attrs a;
        a.dims = std::move(d);
        return a;
    };
    const uint32_t x = g.input("x", Type{fp32, {1, S, D}});
    const uint32_t ln1_g = c("ln1.weight", {D}, p.ln1_g), ln1_b = c("ln1.bias", {D}, p.ln1_b);
    const uint32_t wq = c("attn.wq", {D, D}, p.wq), bq = c("attn.bq", {D}, p.bq);
    const uint32_t wk = c("attn.wk", {D, D}, p.wk), bk = c("attn.bk", {D}, p.bk);
    const uint32_t wv = c("attn.wv", {D, D}, p.wv), bv = c("attn.bv", {D}, p.bv);
    const uint32_t wo = c("attn.wo", {D, D}, p.wo), bo = c("attn.bo", {D}, p.bo);
    const uint32_t ln2_g = c("ln2.weight", {D}, p.ln2_g), ln2_b = c("ln2.bias", {D}, p.ln2_b);
    const uint32_t w1 = c("mlp.w1", {D, F}, p.w1), b1 = c("mlp.b1", {F}, p.b1);
    const uint32_t w2 = c("mlp.w2", {F, D}, p.w2), b2 = c("mlp.b2", {D}, p.b2);

    auto linear = [&](const std::string &name, uint32_t in, uint32_t w, uint32_t b) {
        return g.add(Op::add, name, {g.add(Op::matmul, name + ".mm", {in, w}), b});
    };
    auto layer_norm = [&](const std::string &name, uint32_t in, uint32_t w, uint32_t b) {
        Attrs a;
        a.eps = s.eps;
        return g.add(Op::layer_norm, name, {in, w, b}, a);
    };
    // [1, S, D] -> [H, S, DH]
    auto heads = [&](const std::string &name, uint32_t v) {
        uint32_t r = g.add(Op::reshape, name + ".split", {v}, dims({S, H, DH}));
        return g.add(Op::transpose, name + ".heads", {r}, dims({1, 0, 2}));
    };
    auto attention = [&](uint32_t in) {
        const uint32_t q = heads("attn.q", linear("attn.q", in, wq, bq));
        const uint32_t k = heads("attn.k", linear("attn.k", in, wk, bk));
        const uint32_t v = heads("attn.v", linear("attn.v", in, wv, bv));
        Attrs tb;
        tb.transpose_b = true;
        const uint32_t scores = g.add(Op::matmul, "attn.scores.mm", {q, k}, tb);
        Attrs scale;
        scale.scalar = 1.0f / std::sqrt(static_cast<float>(DH));
        const uint32_t scaled = g.add(Op::mul, "attn.scores", {scores}, scale);
        const uint32_t probs = g.add(Op::softmax, "attn.softmax", {scaled});
        const uint32_t o = g.add(Op::matmul, "attn.pv", {probs, v});
        const uint32_t merged = g.add(Op::transpose, "attn.merge", {o}, dims({1, 0, 2}));
        return g.add(Op::reshape, "attn.concat", {merged}, dims({1, S, D}));
    };
    auto mlp_hidden = [&](uint32_t in) {
        return g.add(Op::gelu, "mlp.gelu", {linear("mlp.fc1", in, w1, b1)});
    };
    uint32_t y = 0;
    if (!s.post_norm) {
        const uint32_t a = layer_norm("ln1", x, ln1_g, ln1_b);
        const uint32_t h =
            g.add(Op::add, "residual1", {linear("attn.out", attention(a), wo, bo), x});
        const uint32_t u = mlp_hidden(layer_norm("ln2", h, ln2_g, ln2_b));
        y = g.add(Op::add, "y", {linear("mlp.fc2", u, w2, b2), h});
    } else {
        const uint32_t r1 =
            g.add(Op::add, "residual1", {linear("attn.out", attention(x), wo, bo), x});
        const uint32_t n1 = layer_norm("ln1", r1, ln1_g, ln1_b);
        const uint32_t r2 =
            g.add(Op::add, "residual2", {linear("mlp.fc2", mlp_hidden(n1), w2, b2), n1});
        y = layer_norm("y", r2, ln2_g, ln2_b);
    }
    g.mark_output(y);
    return g;
}

Case compiled_transformer_block_case(uint64_t seed, const TransformerShape &s) {
    return compiled_case(seed, s,
                         fmt::format("transformer block (seq {}, d_model {}, {} heads, d_ff {}), "
                                     "fp32, compiled",
                                     s.seq, s.d_model, s.heads, s.d_ff),
                         transformer_block_tolerance());
}

Tolerance encoder_layer_tolerance() {
    return Tolerance{1e-5, 1e-5};
}

Case encoder_768_case(uint64_t seed) {
    const TransformerShape &s = bert_base_shape;
    return compiled_case(seed, s,
                         fmt::format("BERT-base encoder layer (seq {}, d_model {}, {} heads, d_ff "
                                     "{}, post-norm), fp32, compiled",
                                     s.seq, s.d_model, s.heads, s.d_ff),
                         encoder_layer_tolerance());
}

} // namespace nex
