/* xstage/ptx.cuh — the one PTX wrapper header: every inline PTX in xstage lives under ptx/.
 *   ptx/memory.cuh   stores/loads with scopes, flags, fences, timers, bulk stores
 *   ptx/hopper.cuh   mbarrier, TMA tensor loads/stores, wgmma, setmaxnreg (sm_90a)
 *   ptx/attn.cuh     extra wgmma shapes/variants used by the attention kernel
 */
#ifndef XSTAGE_PTX_CUH
#define XSTAGE_PTX_CUH
#include "xstage/ptx/memory.cuh"
#if __has_include("xstage/ptx/hopper.cuh")
#include "xstage/ptx/hopper.cuh"
#endif
#if __has_include("xstage/ptx/attn.cuh")
#include "xstage/ptx/attn.cuh"
#endif
#endif
