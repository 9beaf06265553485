/* xstage/calib.h — placeholder until its issue lands. */
#ifndef XSTAGE_CALIB_H
#define XSTAGE_CALIB_H
#endif
