// Work counters for persistent kernels that hand out their work tiles at run time (Note [Work
// counter]). Vendor-neutral: the stream is passed as an opaque handle.
#pragma once

namespace kiln::gpu {

// Note [Work counter]
// A persistent kernel whose work tiles take unequal times (causal attention) balances them best by
// handing them out in order, heaviest first, to whichever block is free: an atomic counter in
// device memory. work_counter() gives two ints per (device, stream), zero whenever no kernel is
// using them: [0] counts the tiles handed out, [1] the blocks that have finished, and the last
// block to finish sets both back to zero. Kernels of one stream run one after another (a
// programmatic launch waits for the kernel before it ends before touching the counter), so one pair
// serves every such kernel of the stream. Made on first use (zeroed in stream order on `stream`)
// and never freed (Note [Leaked at exit]). Null while `stream` captures a graph: a graph may run on
// another stream, beside eager work on this one, so captured kernels use a static schedule.
int* work_counter(int device, void* stream);

}  // namespace kiln::gpu
