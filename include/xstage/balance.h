/* xstage/balance.h — TEMPO expert-parallel dispatch (pure C). Written by the TEMPO issue. */
#ifndef XSTAGE_BALANCE_H
#define XSTAGE_BALANCE_H
#endif
