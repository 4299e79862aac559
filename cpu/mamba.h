// NemotronH's Mamba2 mixer, one row (token) at a time: the causal conv over
// xBC, the time steps, the state update and the gated RMSNorm. Plain loops
// in a fixed order, compiled once for every SIMD path (the exps go through
// the path's exp16, which gives the same bits on all of them), so a row's
// outputs depend only on its inputs and the state it starts from.
//
// There is no chunked (SSD) form on any path: prefill, decode and verify
// rows all take the same sequential recurrence, which is what makes a
// token's bits independent of how its prompt was cut into rounds, and what
// lets a rollback replay a round's accepted rows to the exact same state
// (docs/design.md, "Recurrent layers").
//
// Shapes, with H heads of P channels, G groups, N state size, K conv taps:
//   xBC row   (conv_dim = H*P + 2*G*N): x, then B (G*N), then C (G*N)
//   state     (H, P, N) fp32: head h reads group h / (H / G) of B and C
//
// Thread-safety: pure functions; distinct heads of one row, or distinct
// rows, may run on distinct threads.
#pragma once

#include <cstdint>

#include "cpu/kernels/isa.h"
#include "model/model_config.h"

namespace tf::cpu::mamba {

// out := silu(bias + sum_j weight[c][j] * inputs[j][c]) for every channel c,
// where inputs holds K consecutive raw xBC rows, oldest first (the row being
// computed last). `bias` may be null. `scratch` holds conv_dim rounded up
// to 16 floats.
void conv_row(const model::MambaConfig& m, const float* weight, const float* bias, const float* inputs,
              kernels::Exp16Fn exp16, float* scratch, float* out);

// dt[h] := clamp(softplus(raw[h] + dt_bias[h]), dt_min, dt_max).
void time_steps(const model::MambaConfig& m, const float* raw, const float* dt_bias, float* dt);

// Heads [first_head, end_head) of one row: to := from * exp(dt*A) + dt * x (x) B,
// and, when y is not null, y := to . C + D * x for those heads. `xbc` is the
// row after conv_row; `to` may equal `from` (the state is updated in place).
// A state size that is a multiple of 16 runs the path's 16-lane kernel
// (kernels/mamba_scan_impl.inc, the same bits on every path); any other, a
// plain loop.
void scan_heads(const model::MambaConfig& m, kernels::ScanStateRowFn scan_row, const float* A, const float* D,
                const float* xbc, const float* dt, const float* from, float* to, float* y, int32_t first_head,
                int32_t end_head);

// y := RMSNorm over groups of inner/G of (y * silu(z)), times `weight`.
// `scratch` holds inner rounded up to 16 floats.
void gated_norm_row(const model::MambaConfig& m, const float* z, const float* weight, float eps, kernels::Exp16Fn exp16,
                    float* scratch, float* y);

}  // namespace tf::cpu::mamba
