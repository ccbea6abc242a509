/* Collectives by topology (ptdp/sim.h): where a group's ranks sit on the nodes, the bandwidth
 * and latencies its collectives see there, and NCCL's algorithms over it.
 *
 * Placement.  Rank w sits on node w / gpus-per-node (the launcher fills nodes in rank order).
 * A group of n ranks spaced stride apart (TP: stride 1; DP: t p in the order tp-pp-dp, t in
 * tp-dp-pp; PP: t or t d) has g = min(n, ceil(gpus-per-node / stride)) of its ranks in a node
 * and spans k = ceil(n / g) nodes.
 *
 * Bandwidth.  Inside a node every rank has its own NVLink (the file's intra-node bus bandwidth;
 * NVSwitch gives it to every group at once).  Between nodes the group's traffic leaves through
 * the NICs, and every group of the same kind runs at the same time (TP groups in lockstep, DP
 * groups all after the backward): the node's gpus-per-node / g groups share its nics-per-node
 * adapters, nics x g / gpus-per-node each (a fraction when there are fewer NICs than GPUs).  A
 * ring (NCCL opens a channel per NIC; each channel's ring runs through the node's g members and
 * leaves once) then moves at the bus bandwidth min(NVLink, share x NIC), and so does the tree's
 * traffic (every node sends and receives about 2 S per all-reduce on the tree's edges).
 *
 * Algorithms (NCCL's cost model in shape: a bandwidth term and a latency term per hop):
 *   ring all-reduce       2 (n-1)/n S / B + 2 [(n - k) a_intra + (k - 1) a_inter]
 *                         (a pass round the ring is n - 1 hops, k - 1 of them between nodes)
 *   ring all-gather and reduce-scatter (S the full tensor)
 *                         (n-1)/n S / B + (n - k) a_intra + (k - 1) a_inter
 *   tree all-reduce       2 S / B + 2 [(g - 1) a_intra + ceil(log2 k) a_inter]
 *                         (a chain through the node's g ranks, NCCL's double binary tree between
 *                         the k nodes; up to the roots and back down)
 *   hierarchical all-reduce  reduce-scatter in the node over g, all-reduce of S / g between the
 *                         k nodes by each member over its own NIC share (ring or tree, the
 *                         faster), all-gather in the node: what NCCL does with NVLink SHARP
 *                         (NVLS / NVLS-tree on NVSwitch 3 nodes: the file's nvlink-sharp key)
 *   auto                  the fastest NCCL would consider: ring or tree, and hierarchical where
 *                         the node has NVLink SHARP (NCCL's tuner picks the algorithm of least
 *                         predicted time for the message size: the tree wins small messages on
 *                         many nodes, where the ring's 2 (n - 1) latencies dominate). */
#include "ptdp/sim_cost.h"

#include <math.h>

static double mind(double x, double y) { return x < y ? x : y; }

ptdp_sim_group ptdp_sim_group_of(const ptdp_sim_hw *hw, int n, int stride)
{
  ptdp_sim_group gr = {.n = n < 1 ? 1 : n};
  const double gpn = hw->gpus_per_node;
  if (stride < 1) stride = 1;
  double g = stride >= gpn ? 1 : ceil(gpn / stride);
  if (g > gr.n) g = gr.n;
  gr.g = (int)g;
  gr.k = (gr.n + gr.g - 1) / gr.g;
  gr.nvlink_bw = hw->intra_bandwidth;
  gr.alpha_intra = hw->intra_latency;
  gr.alpha_inter = gr.k > 1 ? hw->inter_latency : hw->intra_latency;
  gr.nic_share = hw->nics_per_node * g / gpn;
  gr.bw = gr.k > 1 ? mind(hw->intra_bandwidth, gr.nic_share * hw->inter_bandwidth) : hw->intra_bandwidth;
  return gr;
}

/* Latency of one pass round the ring: n - 1 hops, k - 1 of them between nodes. */
static double ring_pass_latency(const ptdp_sim_group *gr)
{
  return (double)(gr->n - gr->k) * gr->alpha_intra + (double)(gr->k - 1) * gr->alpha_inter;
}

static double ring_allreduce(const ptdp_sim_group *gr, double S)
{
  return 2.0 * (gr->n - 1) / gr->n * S / gr->bw + 2 * ring_pass_latency(gr);
}

static double tree_allreduce(const ptdp_sim_group *gr, double S)
{
  const double up = (gr->g - 1) * gr->alpha_intra + ceil(log2((double)gr->k)) * gr->alpha_inter;
  return 2.0 * S / gr->bw + 2 * up;
}

static double gather(const ptdp_sim_group *gr, double S)
{
  return (double)(gr->n - 1) / gr->n * S / gr->bw + ring_pass_latency(gr);
}

/* Reduce-scatter over the node's g, all-reduce of S/g over the k nodes at one member's NIC
 * share (nic_share / g adapters), all-gather over the node's g. */
static double hierarchical_allreduce(const ptdp_sim_hw *hw, const ptdp_sim_group *gr, double S)
{
  const ptdp_sim_group node = {.n = gr->g, .g = gr->g, .k = 1, .bw = gr->nvlink_bw, .nvlink_bw = gr->nvlink_bw,
                               .nic_share = gr->nic_share, .alpha_intra = gr->alpha_intra,
                               .alpha_inter = gr->alpha_intra};
  ptdp_sim_group across = {.n = gr->k, .g = 1, .k = gr->k, .nvlink_bw = gr->nvlink_bw,
                           .nic_share = gr->nic_share / gr->g, .alpha_intra = gr->alpha_inter,
                           .alpha_inter = gr->alpha_inter};
  across.bw = mind(gr->nvlink_bw, across.nic_share * hw->inter_bandwidth);
  const double inner = gr->g > 1 ? 2 * gather(&node, S) : 0;
  const double outer = gr->k > 1 ? mind(ring_allreduce(&across, S / gr->g), tree_allreduce(&across, S / gr->g)) : 0;
  return inner + outer;
}

double ptdp_sim_collective_time(const ptdp_sim_hw *hw, const ptdp_sim_group *gr, ptdp_sim_coll kind,
                                ptdp_sim_allreduce algo, double bytes, ptdp_sim_allreduce *chosen)
{
  if (chosen) *chosen = PTDP_SIM_ALLREDUCE_RING;
  if (gr->n <= 1 || bytes <= 0) return 0;
  if (kind != PTDP_SIM_COLL_ALLREDUCE) return gather(gr, bytes); /* NCCL: ring only */
  const double ring = ring_allreduce(gr, bytes), tree = tree_allreduce(gr, bytes);
  const double hier = hierarchical_allreduce(hw, gr, bytes);
  double best = ring;
  ptdp_sim_allreduce pick = PTDP_SIM_ALLREDUCE_RING;
  if (algo == PTDP_SIM_ALLREDUCE_TREE || (algo == PTDP_SIM_ALLREDUCE_AUTO && tree < best)) {
    best = tree;
    pick = PTDP_SIM_ALLREDUCE_TREE;
  }
  if (algo == PTDP_SIM_ALLREDUCE_HIERARCHICAL || (algo == PTDP_SIM_ALLREDUCE_AUTO && hw->nvlink_sharp && hier < best)) {
    best = hier;
    pick = PTDP_SIM_ALLREDUCE_HIERARCHICAL;
  }
  if (chosen) *chosen = pick;
  return best;
}
