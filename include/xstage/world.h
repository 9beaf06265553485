/* xstage/world.h — worlds, symmetric heap, device status, tracing (host side). Written by the
 * world/RMA issue. */
#ifndef XSTAGE_WORLD_H
#define XSTAGE_WORLD_H
#endif
