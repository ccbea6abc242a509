/* The sizes one rank works with: see include/ptdp/shape.h. */
#include "ptdp/shape.h"

ptdp_rank_shape ptdp_rank_shape_of(const ptdp_model_shape *m, int seq, int micro_batch, int t, int tp_rank)
{
  ptdp_rank_shape r = {.s = seq, .b = micro_batch, .t = t, .tp_rank = tp_rank, .h = m->hidden, .a = m->heads,
                       .f = m->ffn};
  r.sp = m->sequence_parallel && t > 1;
  r.N = r.s * r.b;
  r.Nl = r.sp ? r.N / t : r.N;
  r.row0 = r.sp ? (long long)tp_rank * r.Nl : 0;
  r.hd = ptdp_model_head_dim(m);
  r.al = m->heads / t;
  r.hl = r.al * r.hd;
  r.gl = ptdp_model_query_groups(m) / t;
  r.hpg = m->heads / ptdp_model_query_groups(m);
  r.qkv = (r.al + 2 * r.gl) * r.hd;
  r.fl = m->ffn / t;
  r.fc1 = m->arch.swiglu ? 2 * r.fl : r.fl;
  r.padded_vocab = ptdp_padded_vocab(m->vocab, m->vocab_divisible_by, t);
  r.vl = r.padded_vocab / t;
  r.v0 = (long long)tp_rank * r.vl;
  r.att = r.b * r.al * r.s * r.s;
  if (m->arch.position == PTDP_POS_ROPE) {
    const double pct = m->arch.rotary_percent > 0 ? m->arch.rotary_percent : 1.0;
    r.rd = (int)(r.hd * pct) / 2 * 2;
  }
  if (m->arch.moe.num_experts > 0) {
    r.E = m->arch.moe.num_experts;
    r.k = m->arch.moe.topk;
    r.efl = ptdp_moe_ffn(&m->arch, m->ffn) / t;
    r.efc1 = m->arch.swiglu ? 2 * r.efl : r.efl;
    r.Nk = r.N * r.k;
  }
  return r;
}
