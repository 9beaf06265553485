/* xstage/attention.h — placeholder until its issue lands. */
#ifndef XSTAGE_ATTENTION_H
#define XSTAGE_ATTENTION_H
#endif
