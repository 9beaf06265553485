/* xstage/gemm.h — placeholder until its issue lands. */
#ifndef XSTAGE_GEMM_H
#define XSTAGE_GEMM_H
#endif
