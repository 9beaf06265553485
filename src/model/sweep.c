/* sweep.c — the calibration sweep planner, the measurement CSV writer and the pure analysis
 * helpers of calibration (knee, measured transition gap), plus the xbench name parsers.
 * Pure C: runs and is tested without a GPU (tests/unit/test_sweep.c). */
#include "core/csv.h"
#include "core/fileio.h"
#include "core/internal.h"
#include "core/strbuf.h"
#include "model/model_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------- names ----- */

static const char* const g_flavours[XS_FLAVOUR_COUNT] = {"st.global.v4", "st.relaxed.sys.v4",
                                                         "st.release.sys.v4", "tma.bulk"};
static const char* const g_flavour_short[XS_FLAVOUR_COUNT] = {"st", "relaxed", "release", "tma"};

const char* xs_flavour_name(xs_flavour f) {
  return (unsigned)f < XS_FLAVOUR_COUNT ? g_flavours[f] : "unknown";
}
const char* xs_gap_mode_name(xs_gap_mode m) {
  return m == XS_GAP_FMA    ? "fma"
         : m == XS_GAP_SPIN ? "spin"
         : m == XS_GAP_LOAD ? "load"
                            : "unknown";
}
const char* xs_sync_mode_name(xs_sync_mode m) {
  return m == XS_SYNC_GRID    ? "sync"
         : m == XS_SYNC_FREE  ? "free"
         : m == XS_SYNC_CLOCK ? "clock"
                              : "unknown";
}

xs_result xs_flavour_parse(xs_flavour* out, const char* s) {
  XSI_ARG(out && s, "xs_flavour_parse: NULL argument");
  for (int i = 0; i < XS_FLAVOUR_COUNT; i++)
    if (!strcmp(s, g_flavours[i]) || !strcmp(s, g_flavour_short[i])) {
      *out = (xs_flavour)i;
      return XS_OK;
    }
  return xsi_set_error(XS_ERR_INVALID_ARG,
                       "unknown store flavour '%s' (known: st.global.v4|st, "
                       "st.relaxed.sys.v4|relaxed, st.release.sys.v4|release, tma.bulk|tma)",
                       s);
}

xs_result xs_gap_mode_parse(xs_gap_mode* out, const char* s) {
  XSI_ARG(out && s, "xs_gap_mode_parse: NULL argument");
  if (!strcmp(s, "fma"))
    *out = XS_GAP_FMA;
  else if (!strcmp(s, "spin"))
    *out = XS_GAP_SPIN;
  else if (!strcmp(s, "load"))
    *out = XS_GAP_LOAD;
  else
    return xsi_set_error(XS_ERR_INVALID_ARG, "unknown gap mode '%s' (known: fma, spin, load)", s);
  return XS_OK;
}

xs_result xs_sync_mode_parse(xs_sync_mode* out, const char* s) {
  XSI_ARG(out && s, "xs_sync_mode_parse: NULL argument");
  if (!strcmp(s, "sync"))
    *out = XS_SYNC_GRID;
  else if (!strcmp(s, "free"))
    *out = XS_SYNC_FREE;
  else if (!strcmp(s, "clock"))
    *out = XS_SYNC_CLOCK;
  else
    return xsi_set_error(XS_ERR_INVALID_ARG, "unknown sync mode '%s' (known: sync, free, clock)",
                         s);
  return XS_OK;
}

xs_result xs_target_parse(xs_target* out, const char* s) {
  XSI_ARG(out && s, "xs_target_parse: NULL argument");
  if (!strcmp(s, "host")) {
    out->kind = XS_TARGET_HOST, out->peer = -1;
    return XS_OK;
  }
  if (!strcmp(s, "hbm")) {
    out->kind = XS_TARGET_HBM, out->peer = -1;
    return XS_OK;
  }
  if (!strcmp(s, "peer:all")) {
    out->kind = XS_TARGET_PEER, out->peer = XS_PEER_ALL;
    return XS_OK;
  }
  if (!strncmp(s, "peer:", 5) && s[5] >= '0' && s[5] <= '9') {
    char* end = NULL;
    long p = strtol(s + 5, &end, 10);
    if (*end == '\0' && p >= 0 && p < 1024) {
      out->kind = XS_TARGET_PEER, out->peer = (int)p;
      return XS_OK;
    }
  }
  return xsi_set_error(XS_ERR_INVALID_ARG, "unknown target '%s' (known: host, hbm, peer:N, peer:all)", s);
}

xs_result xs_target_name(char* buf, size_t n, xs_target t) {
  XSI_ARG(buf && n >= 16, "xs_target_name: buf must hold >= 16 bytes");
  if (t.kind == XS_TARGET_HOST)
    snprintf(buf, n, "host");
  else if (t.kind == XS_TARGET_HBM)
    snprintf(buf, n, "hbm");
  else if (t.kind == XS_TARGET_PEER && t.peer >= 0)
    snprintf(buf, n, "peer:%d", t.peer);
  else if (t.kind == XS_TARGET_PEER && t.peer == XS_PEER_ALL)
    snprintf(buf, n, "peer:all");
  else
    return xsi_set_error(XS_ERR_INVALID_ARG, "xs_target_name: bad target kind %d", t.kind);
  return XS_OK;
}

double xs_xbench_default_period(xs_target t, int K, double V, double G) {
  xs_link_profile p;
  const char* name = t.kind == XS_TARGET_HOST  ? "h200-host"
                     : t.kind == XS_TARGET_HBM ? "h200-hbm"
                                               : "h200-nvlink";
  double t0 = 0.0;
  if (xs_profile_default(&p, name) == XS_OK && K >= 1 && V > 0) {
    xsi_link l = xsi_link_of(&p, (double)K);
    t0 = xsi_t0(&l, V);
  }
  xsi_clear_error();
  return G + t0;
}

const char* xs_sweep_phase_name(xs_sweep_phase p) {
  static const char* const names[] = {"t0", "R", "Q", "grid", "repeat"};
  return (unsigned)p <= XS_PHASE_REPEAT ? names[p] : "unknown";
}

/* ----------------------------------------------------------------------- CSV rows ----- */

xs_result xs_calib_rows_append(xs_calib_row** rows, size_t* n, size_t* cap,
                               const xs_xbench_config* cfg, const xs_xbench_summary* s,
                               const xs_xbench_burst* bursts, const char* phase, long point,
                               int rep) {
  XSI_ARG(rows && n && cap && cfg && s && bursts && phase, "xs_calib_rows_append: NULL argument");
  XSI_ARG(cfg->bursts >= 1, "xs_calib_rows_append: cfg->bursts must be >= 1");
  size_t need = *n + (size_t)cfg->bursts;
  if (need > *cap) {
    size_t nc = *cap ? *cap : 1024;
    while (nc < need)
      nc *= 2;
    xs_calib_row* r = (xs_calib_row*)realloc(*rows, nc * sizeof *r);
    if (!r) return xsi_set_error(XS_ERR_NO_MEMORY, "calibration rows: %zu rows", nc);
    *rows = r, *cap = nc;
  }
  for (int b = 0; b < cfg->bursts; b++) {
    xs_calib_row* r = &(*rows)[(*n)++];
    memset(r, 0, sizeof *r);
    snprintf(r->transport, sizeof r->transport, "%s", s->transport);
    r->K = cfg->K;
    r->V = s->V;
    r->gap_ns = s->gap_measured_ns;
    r->burst_index = b;
    r->t_iss_ns = bursts[b].t_iss_ns;
    r->t_iss_mean_ns = bursts[b].t_iss_mean_ns;
    r->gap_nominal_ns = cfg->gap_ns;
    r->t_ret_ns = bursts[b].t_ret_ns;
    r->t_iss_cyc_ns = bursts[b].t_iss_cyc_ns;
    r->t_own_max_ns = bursts[b].t_own_max_ns;
    r->t_own_mean_ns = bursts[b].t_own_mean_ns;
    r->t_skew_ns = bursts[b].t_skew_ns;
    r->e_end_ns = bursts[b].e_end_ns;
    r->m_end_ns = bursts[b].m_end_ns;
    r->gap_before_ns = bursts[b].gap_before_ns;
    r->seq = cfg->sync_mode == XS_SYNC_CLOCK ? point + 1 : 0;
    r->period_ns = cfg->sync_mode == XS_SYNC_CLOCK ? s->sched_period_ns : NAN;
    snprintf(r->flavour, sizeof r->flavour, "%s", xs_flavour_name(cfg->flavour));
    snprintf(r->mode, sizeof r->mode, "%s", xs_sync_mode_name(cfg->sync_mode));
    snprintf(r->gap_mode, sizeof r->gap_mode, "%s", xs_gap_mode_name(cfg->gap_mode));
    snprintf(r->phase, sizeof r->phase, "%.7s", phase);
    r->point = point;
    r->rep = rep;
  }
  return XS_OK;
}

/* Shortest of %.15g / %.17g that reads back to the same double; non-finite as "nan". */
static void put_num(xsi_strbuf* sb, double x) {
  char buf[40];
  if (!isfinite(x)) {
    xsi_sb_puts(sb, "nan");
    return;
  }
  snprintf(buf, sizeof buf, "%.15g", x);
  if (strtod(buf, NULL) != x) snprintf(buf, sizeof buf, "%.17g", x);
  xsi_sb_puts(sb, buf);
}

/* Metadata strings are written as they are when they contain no comma, quote or newline,
 * otherwise quoted with doubled quotes. */
static void put_str(xsi_strbuf* sb, const char* s) {
  if (!strpbrk(s, ",\"\n\r")) {
    xsi_sb_puts(sb, s);
    return;
  }
  xsi_sb_puts(sb, "\"");
  for (; *s; s++) {
    if (*s == '"') xsi_sb_puts(sb, "\"");
    xsi_sb_append(sb, s, 1);
  }
  xsi_sb_puts(sb, "\"");
}

xs_result xs_calib_csv_format(char** out, size_t* len, const xs_calib_row* rows, size_t n) {
  XSI_ARG(out && (rows || n == 0), "xs_calib_csv_format: NULL argument");
  xsi_strbuf sb = XSI_STRBUF_INIT;
  xsi_sb_puts(&sb, "transport,K,V_bytes,gap_ns,burst_index,t_iss_ns,t_iss_mean_ns,gap_nominal_ns,"
                   "t_ret_ns,t_iss_cyc_ns,flavour,mode,gap_mode,phase,point,rep,t_own_max_ns,"
                   "t_own_mean_ns,t_skew_ns,e_end_ns,m_end_ns,gap_before_ns");
  /* seq, period_ns: only when some row is clock-scheduled (older readers see the old file) */
  int with_seq = 0;
  for (size_t i = 0; i < n && !with_seq; i++)
    with_seq = rows[i].seq >= 1;
  xsi_sb_puts(&sb, with_seq ? ",seq,period_ns\n" : "\n");
  for (size_t i = 0; i < n; i++) {
    const xs_calib_row* r = &rows[i];
    put_str(&sb, r->transport);
    xsi_sb_printf(&sb, ",%d,", r->K);
    put_num(&sb, r->V);
    xsi_sb_puts(&sb, ",");
    put_num(&sb, r->gap_ns);
    xsi_sb_printf(&sb, ",%ld,", r->burst_index);
    put_num(&sb, r->t_iss_ns);
    xsi_sb_puts(&sb, ",");
    put_num(&sb, r->t_iss_mean_ns);
    xsi_sb_puts(&sb, ",");
    put_num(&sb, r->gap_nominal_ns);
    xsi_sb_puts(&sb, ",");
    put_num(&sb, r->t_ret_ns);
    xsi_sb_puts(&sb, ",");
    put_num(&sb, r->t_iss_cyc_ns);
    xsi_sb_puts(&sb, ",");
    put_str(&sb, r->flavour);
    xsi_sb_puts(&sb, ",");
    put_str(&sb, r->mode);
    xsi_sb_puts(&sb, ",");
    put_str(&sb, r->gap_mode);
    xsi_sb_puts(&sb, ",");
    put_str(&sb, r->phase);
    xsi_sb_printf(&sb, ",%ld,%d", r->point, r->rep);
    const double extra[6] = {r->t_own_max_ns, r->t_own_mean_ns, r->t_skew_ns,
                             r->e_end_ns,     r->m_end_ns,      r->gap_before_ns};
    for (int k = 0; k < 6; k++) {
      xsi_sb_puts(&sb, ",");
      put_num(&sb, extra[k]);
    }
    if (with_seq) {
      xsi_sb_printf(&sb, ",%ld,", r->seq);
      put_num(&sb, r->period_ns);
    }
    xsi_sb_puts(&sb, "\n");
  }
  xs_result res = xsi_sb_status(&sb);
  if (res != XS_OK) {
    xsi_sb_free(&sb);
    return xsi_set_error(res, "calibration CSV: out of memory (%zu rows)", n);
  }
  if (len) *len = sb.len;
  *out = sb.data;
  return XS_OK;
}

xs_result xs_calib_csv_write(const char* path, const xs_calib_row* rows, size_t n) {
  XSI_ARG(path, "xs_calib_csv_write: NULL path");
  char* text = NULL;
  size_t len = 0;
  XSI_CHECK(xs_calib_csv_format(&text, &len, rows, n));
  xs_result res = xsi_write_file_atomic(path, text ? text : "", len);
  free(text);
  return res;
}

/* ------------------------------------------------- the reduction of raw stamps ----- */

/* Signed difference of two globaltimer stamps in ns, exact (the stamps are ~1e18: a double
 * would lose the low bits). */
static double ns_diff(uint64_t a, uint64_t b) {
  return a >= b ? (double)(a - b) : -(double)(b - a);
}

static int cmp_dbl_r(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

xs_result xs_xbench_reduce(xs_xbench_burst* out, xs_xbench_summary* s, const xs_xbench_stamp* st,
                           int K, int nb, double* session_clk) {
  XSI_ARG(out && s && st, "xs_xbench_reduce: NULL argument");
  XSI_ARG(K >= 1 && nb >= 1 && nb <= XS_XBENCH_MAX_BURSTS,
          "xs_xbench_reduce: bad K %d or bursts %d", K, nb);
  /* SM clock: cycles per globaltimer ns over the whole run (only per-producer durations use
   * clock64; SM clocks are not comparable across SMs). A short run spans few timer steps, so
   * below 50 us per producer the session's last good figure is used. */
  double cyc = 0, cyc_ns = 0;
  for (int p = 0; p < K; p++) {
    const xs_xbench_stamp *a = &st[p], *z = &st[(size_t)(nb - 1) * K + p];
    cyc += (double)(z->end_cyc - a->start_cyc);
    cyc_ns += ns_diff(z->end_ns, a->start_ns);
  }
  s->sm_clock_ghz = cyc_ns > 0 ? cyc / cyc_ns : 0;
  if (cyc_ns >= 50e3 * K && s->sm_clock_ghz > 0) {
    if (session_clk) *session_clk = s->sm_clock_ghz;
  } else if (session_clk && *session_clk > 0) {
    s->sm_clock_ghz = *session_clk;
  }
  const double clk = s->sm_clock_ghz;
  uint64_t S0 = st[0].start_ns;
  for (int p = 1; p < K; p++)
    S0 = st[p].start_ns < S0 ? st[p].start_ns : S0;
  /* clock mode: every stamp carries its burst's schedule S_b; times count from S_0 = t0 */
  int clock = 1;
  for (size_t i = 0; i < (size_t)nb * K && clock; i++)
    clock = st[i].sched_ns != 0 && st[i].sched_ns == st[i - i % (size_t)K].sched_ns;
  if (clock) S0 = st[0].sched_ns;
  s->skew_max_ns = 0;
  /* NOTE: the aggregate end of burst b is an order statistic: E_b = the time at which (b+1)*K
   * producer-bursts, i.e. (b+1)*V bytes, have been issued, whichever producers issued them.
   * Producers are served unfairly: once the stage back-pressures, some run several bursts
   * ahead of others (skews of hundreds of us were measured on the H200's host path), so "the
   * last producer's end of its own burst b" measures one starved producer, not the aggregate
   * issuer of the model. While the producers stay aligned the two definitions coincide. */
  size_t ne = (size_t)nb * K;
  double* ends = (double*)malloc(ne * sizeof(double));
  if (!ends) return xsi_set_error(XS_ERR_NO_MEMORY, "xs_xbench_reduce: %zu stamps", ne);
  for (size_t i = 0; i < ne; i++)
    ends[i] = ns_diff(st[i].end_ns, S0);
  qsort(ends, ne, sizeof(double), cmp_dbl_r);
  double Eprev = 0, Mprev = 0, gsum = 0;
  for (int b = 0; b < nb; b++) {
    const xs_xbench_stamp* r = st + (size_t)b * K;
    double E = ends[(size_t)(b + 1) * K - 1], M = 0, smin = INFINITY, smax = -INFINITY;
    double own_max = 0, own_sum = 0, ret_max = 0, G = 0, Gn = 0;
    for (int p = 0; p < K; p++) {
      double e = ns_diff(r[p].end_ns, S0), s0 = ns_diff(r[p].start_ns, S0);
      M += e;
      smin = s0 < smin ? s0 : smin, smax = s0 > smax ? s0 : smax;
      double own = clk > 0 ? (double)(r[p].end_cyc - r[p].start_cyc) / clk
                           : ns_diff(r[p].end_ns, r[p].start_ns);
      own_max = own > own_max ? own : own_max;
      own_sum += own;
      double rt = r[p].ret_ns ? ns_diff(r[p].ret_ns, r[p].start_ns) : NAN;
      if (rt > ret_max) ret_max = rt;
      if (b > 0) {
        /* the compute gap before this burst: the producer's own gap after burst b-1 (a run
         * recorded without gap stamps: free mode's own next start - own end) */
        const xs_xbench_stamp* q = &r[p - K];
        double g =
            q->gap_end_ns ? ns_diff(q->gap_end_ns, q->end_ns) : ns_diff(r[p].start_ns, q->end_ns);
        G += g, Gn++;
      }
    }
    M /= K;
    G = Gn > 0 ? G / Gn : 0;
    xs_xbench_burst* o = &out[b];
    o->t_start_ns = smin;
    o->t_skew_ns = smax - smin;
    if (o->t_skew_ns > s->skew_max_ns) s->skew_max_ns = o->t_skew_ns;
    if (clock) {
      /* the aggregate burst starts at A_b = max(S_b, E_{b-1}); the gap before it is the part
       * of the wait for S_b after the previous burst ended (0 when the burst is late) */
      double Sb = ns_diff(r[0].sched_ns, S0);
      G = b ? fmax(0.0, Sb - Eprev) : 0.0;
      o->e_end_ns = E, o->m_end_ns = M, o->gap_before_ns = G;
      o->t_iss_ns = E - (b ? fmax(Sb, Eprev) : Sb);
      o->t_iss_mean_ns = M - (b ? fmax(Sb, Mprev) : Sb);
    } else {
      o->e_end_ns = E, o->m_end_ns = M, o->gap_before_ns = G;
      o->t_iss_ns = b ? E - Eprev - G : E;
      o->t_iss_mean_ns = b ? M - Mprev - G : M;
    }
    o->t_own_max_ns = own_max;
    o->t_own_mean_ns = own_sum / K;
    o->t_iss_cyc_ns = clk > 0 ? own_max : NAN;
    o->t_ret_ns = ret_max;
    /* CSV contract of xs_dataset_load: issue times positive, the mean no larger than the
     * slowest (a producer that drifted far ahead can make M_b - M_{b-1} - G_b small) */
    if (!(o->t_iss_ns >= 1.0)) o->t_iss_ns = 1.0;
    if (!(o->t_iss_mean_ns >= 1.0)) o->t_iss_mean_ns = 1.0;
    if (o->t_iss_mean_ns > o->t_iss_ns) o->t_iss_mean_ns = o->t_iss_ns;
    o->gap_ns = NAN;
    if (b > 0) out[b - 1].gap_ns = G, gsum += G;
    Eprev = E, Mprev = M;
  }
  free(ends);
  s->total_ns = out[nb - 1].e_end_ns;
  s->gap_measured_ns = nb > 1 ? gsum / (nb - 1) : 0;
  s->t_iss_first_ns = out[0].t_iss_ns;
  s->sched_period_ns = clock && nb > 1 ? ns_diff(st[K].sched_ns, st[0].sched_ns) : 0;
  /* clock mode: the configuration's gap is P - T0 (T0: the first burst, from idle); the
   * measured per-burst gaps shrink below it once bursts start late */
  if (clock) s->gap_measured_ns = nb > 1 ? fmax(0.0, s->sched_period_ns - s->t_iss_first_ns) : 0;
  int h = nb / 2, m = nb - h;
  double* tmp = (double*)malloc(2 * (size_t)m * sizeof(double));
  if (!tmp) return xsi_set_error(XS_ERR_NO_MEMORY, "xs_xbench_reduce: %d bursts", nb);
  for (int i = 0; i < m; i++)
    tmp[i] = out[h + i].t_iss_ns, tmp[m + i] = out[h + i].t_iss_mean_ns;
  qsort(tmp, (size_t)m, sizeof(double), cmp_dbl_r);
  qsort(tmp + m, (size_t)m, sizeof(double), cmp_dbl_r);
  s->t_iss_steady_ns = m % 2 ? tmp[m / 2] : 0.5 * (tmp[m / 2 - 1] + tmp[m / 2]);
  s->t_iss_mean_steady_ns = m % 2 ? tmp[m + m / 2] : 0.5 * (tmp[m + m / 2 - 1] + tmp[m + m / 2]);
  free(tmp);
  s->period_ns = s->rate_gbps = 0;
  if (nb >= 3 && nb - 1 > h) {
    /* bursts h+1 .. nb-1: the aggregate issuer's busy time between E_h and E_last */
    double span = out[nb - 1].e_end_ns - out[h].e_end_ns, gaps = 0;
    for (int b = h + 1; b < nb; b++)
      gaps += out[b].gap_before_ns;
    s->period_ns = span / (nb - 1 - h);
    s->rate_gbps = span - gaps > 0 ? s->V * (nb - 1 - h) / (span - gaps) : 0;
  }
  return XS_OK;
}

/* ----------------------------------------------------------------- stamps CSV ----- */

xs_result xs_xbench_stamps_csv_write(const char* path, const xs_xbench_stamp* st,
                                     const xs_xbench_config* cfg, const xs_xbench_summary* s) {
  XSI_ARG(path && st && cfg && s, "xs_xbench_stamps_csv_write: NULL argument");
  xsi_strbuf sb = XSI_STRBUF_INIT;
  xsi_sb_puts(&sb, "K,V_bytes,gap_nominal_ns,mode,producer,burst,start_ns,ret_ns,end_ns,"
                   "gap_end_ns,gap_ns,start_cyc,end_cyc,sched_ns\n");
  for (int b = 0; b < cfg->bursts; b++)
    for (int p = 0; p < cfg->K; p++) {
      const xs_xbench_stamp* x = &st[(size_t)b * cfg->K + p];
      xsi_sb_printf(&sb, "%d,", cfg->K);
      put_num(&sb, s->V);
      xsi_sb_puts(&sb, ",");
      put_num(&sb, cfg->gap_ns);
      xsi_sb_printf(&sb, ",%s,%d,%d,%llu,%llu,%llu,%llu,", xs_sync_mode_name(cfg->sync_mode), p, b,
                    (unsigned long long)x->start_ns, (unsigned long long)x->ret_ns,
                    (unsigned long long)x->end_ns, (unsigned long long)x->gap_end_ns);
      put_num(&sb, x->gap_end_ns ? ns_diff(x->gap_end_ns, x->end_ns) : NAN);
      xsi_sb_printf(&sb, ",%llu,%llu,%llu\n", (unsigned long long)x->start_cyc,
                    (unsigned long long)x->end_cyc, (unsigned long long)x->sched_ns);
    }
  xs_result res = xsi_sb_status(&sb);
  if (res != XS_OK) {
    xsi_sb_free(&sb);
    return xsi_set_error(res, "stamps CSV: out of memory");
  }
  res = xsi_write_file_atomic(path, sb.data ? sb.data : "", sb.len);
  xsi_sb_free(&sb);
  return res;
}

static xs_result csv_u64(uint64_t* out, const xsi_csv* csv, size_t r, long col, const char* path) {
  const char* f = csv->rows[r][col];
  char* end = NULL;
  unsigned long long x = strtoull(f, &end, 10);
  if (!f[0] || f[0] == '-' || !end || *end != '\0')
    return xsi_set_error(XS_ERR_PARSE, "%s:%d: field '%s': '%.40s' is not an unsigned integer",
                         path, csv->row_line[r], csv->header[col], f);
  *out = (uint64_t)x;
  return XS_OK;
}

xs_result xs_xbench_stamps_csv_read(xs_xbench_stamp** st, xs_xbench_config* cfg, double* V,
                                    int* nruns, const char* path, int run) {
  XSI_ARG(st && cfg && path && run >= 0, "xs_xbench_stamps_csv_read: NULL argument or run < 0");
  *st = NULL;
  static const char* const cols[] = {"K",        "V_bytes",    "gap_nominal_ns", "mode",
                                     "producer", "burst",      "start_ns",       "ret_ns",
                                     "end_ns",   "gap_end_ns", "start_cyc",      "end_cyc"};
  long c[12];
  char* text = NULL;
  size_t len = 0;
  xsi_csv* csv = NULL;
  xs_xbench_stamp* out = NULL;
  xs_result res = XS_OK;
  XSI_CHECK_GOTO(xsi_read_file(&text, &len, path, 0), res, done);
  XSI_CHECK_GOTO(xsi_csv_parse(&csv, text, len, path, 10000000), res, done);
  for (int j = 0; j < 12; j++)
    XSI_CHECK_GOTO(xsi_csv_require(&c[j], csv, cols[j]), res, done);
  const long csched = xsi_csv_col(csv, "sched_ns"); /* optional: clock mode */
  /* runs: consecutive rows of one configuration; a new run starts where the configuration
   * changes or where burst 0 comes again after a later burst */
  size_t r0 = 0, r1 = 0, sel0 = 0, sel1 = 0;
  int nr = 0, found = 0;
  while (r0 < csv->nrows) {
    long long k0 = 0, kk = 0, bb = 0, maxb = 0;
    double v0 = 0, g0 = 0, v = 0, g = 0;
    XSI_CHECK_GOTO(xsi_csv_int(&k0, csv, r0, c[0], 1, 1024), res, done);
    XSI_CHECK_GOTO(xsi_csv_number(&v0, csv, r0, c[1]), res, done);
    XSI_CHECK_GOTO(xsi_csv_number(&g0, csv, r0, c[2]), res, done);
    for (r1 = r0; r1 < csv->nrows; r1++) {
      XSI_CHECK_GOTO(xsi_csv_int(&kk, csv, r1, c[0], 1, 1024), res, done);
      XSI_CHECK_GOTO(xsi_csv_number(&v, csv, r1, c[1]), res, done);
      XSI_CHECK_GOTO(xsi_csv_number(&g, csv, r1, c[2]), res, done);
      XSI_CHECK_GOTO(xsi_csv_int(&bb, csv, r1, c[5], 0, XS_XBENCH_MAX_BURSTS - 1), res, done);
      if (kk != k0 || v != v0 || g != g0 || strcmp(csv->rows[r1][c[3]], csv->rows[r0][c[3]])) break;
      if (bb == 0 && maxb > 0) break;
      maxb = bb > maxb ? bb : maxb;
    }
    if (nr == run) {
      sel0 = r0, sel1 = r1, found = 1;
      cfg->K = (int)k0, cfg->bursts = (int)maxb + 1, cfg->gap_ns = g0;
      if (V) *V = v0;
      if (xs_sync_mode_parse(&cfg->sync_mode, csv->rows[r0][c[3]]) != XS_OK)
        XSI_FAIL(res, XS_ERR_PARSE, done, "%s:%d: mode '%.20s'", path, csv->row_line[r0],
                 csv->rows[r0][c[3]]);
    }
    nr++;
    r0 = r1;
  }
  if (nruns) *nruns = nr;
  if (!found)
    XSI_FAIL(res, XS_ERR_INVALID_ARG, done, "%s: run %d requested, the file holds %d", path, run,
             nr);
  if ((size_t)cfg->K * (size_t)cfg->bursts != sel1 - sel0)
    XSI_FAIL(res, XS_ERR_PARSE, done, "%s:%d: run %d has %zu rows for K %d x %d bursts", path,
             csv->row_line[sel0], run, sel1 - sel0, cfg->K, cfg->bursts);
  out = (xs_xbench_stamp*)calloc(sel1 - sel0, sizeof *out);
  if (!out) XSI_FAIL(res, XS_ERR_NO_MEMORY, done, "%s: %zu stamps", path, sel1 - sel0);
  for (size_t r = sel0; r < sel1; r++) {
    long long pp = 0, bb = 0;
    XSI_CHECK_GOTO(xsi_csv_int(&pp, csv, r, c[4], 0, cfg->K - 1), res, done);
    XSI_CHECK_GOTO(xsi_csv_int(&bb, csv, r, c[5], 0, cfg->bursts - 1), res, done);
    xs_xbench_stamp* x = &out[(size_t)bb * cfg->K + pp];
    XSI_CHECK_GOTO(csv_u64(&x->start_ns, csv, r, c[6], path), res, done);
    XSI_CHECK_GOTO(csv_u64(&x->ret_ns, csv, r, c[7], path), res, done);
    XSI_CHECK_GOTO(csv_u64(&x->end_ns, csv, r, c[8], path), res, done);
    XSI_CHECK_GOTO(csv_u64(&x->gap_end_ns, csv, r, c[9], path), res, done);
    XSI_CHECK_GOTO(csv_u64(&x->start_cyc, csv, r, c[10], path), res, done);
    XSI_CHECK_GOTO(csv_u64(&x->end_cyc, csv, r, c[11], path), res, done);
    if (csched >= 0) XSI_CHECK_GOTO(csv_u64(&x->sched_ns, csv, r, csched, path), res, done);
  }
  *st = out;
  out = NULL;
done:
  free(out);
  xsi_csv_free(csv);
  free(text);
  return res;
}

/* ------------------------------------------------------------------- the planner ----- */

xs_result xs_sweep_estimate(double* ns, const xs_sweep_point* pt, const xs_link_profile* p,
                            double overhead_ns) {
  XSI_ARG(ns && pt && p, "xs_sweep_estimate: NULL argument");
  XSI_ARG(pt->K >= 1 && pt->V > 0 && pt->G >= 0 && pt->bursts >= 1,
          "xs_sweep_estimate: bad point (K %d, V %g, G %g, bursts %d)", pt->K, pt->V, pt->G,
          pt->bursts);
  xs_steady st;
  XSI_CHECK(xs_fluid_periodic(&st, p, (double)pt->K, pt->V, pt->G));
  double t = st.t_iss_first_ns + (pt->bursts - 1) * (st.t_iss_ns + pt->G) + pt->G;
  /* NOTE: a grid barrier per burst (~2 us) is not in the model; counted here. */
  t += 2000.0 * pt->bursts;
  *ns = t + (overhead_ns > 0 ? overhead_ns : 400e3);
  return XS_OK;
}

typedef struct plan_ctx {
  xs_sweep_point* out;
  size_t cap, n;
  const xs_sweep_options* opt;
  const xs_link_profile* p;
  double overhead;
} plan_ctx;

static xs_result add_point(plan_ctx* c, xs_sweep_phase ph, int K, double V, double G, int bursts,
                           int rep, double centre) {
  if (c->n >= c->cap)
    return xsi_set_error(XS_ERR_EXHAUSTED, "sweep plan: more than %zu points", c->cap);
  xs_sweep_point* pt = &c->out[c->n];
  pt->phase = ph, pt->K = K, pt->V = V, pt->G = G, pt->bursts = bursts, pt->rep = rep;
  pt->G_centre = centre;
  XSI_CHECK(xs_sweep_estimate(&pt->est_ns, pt, c->p, c->overhead));
  c->n++;
  return XS_OK;
}

/* K values: those of `ks` capped to the SM count, without duplicates, ascending. */
static int k_set(int* out, const int* ks, int nk, int sm) {
  int n = 0;
  for (int i = 0; i < nk; i++) {
    int k = ks[i] > sm ? sm : ks[i];
    int dup = 0;
    for (int j = 0; j < n; j++)
      dup |= out[j] == k;
    if (!dup && k >= 1) out[n++] = k;
  }
  return n;
}

xs_result xs_calib_predicted_settle_gap(double* G_ns, const xs_link_profile* p, double K, double V,
                                        double tol) {
  XSI_ARG(G_ns && p, "xs_calib_predicted_settle_gap: NULL argument");
  XSI_ARG(K >= 1 && V > 0 && isfinite(V), "xs_calib_predicted_settle_gap: bad K %g / V %g", K, V);
  if (!(tol > 0)) tol = 0.05;
  xs_steady st;
  XSI_CHECK(xs_fluid_periodic(&st, p, K, V, 0));
  double first = st.t_iss_first_ns;
  if (st.t_iss_ns <= (1.0 + tol) * first) {
    *G_ns = 0;
    return XS_OK;
  }
  /* steady T_iss does not grow with G; at G = V/R + first the stage empties every period */
  double lo = 0, hi = V / xsi_drain_rate(p, K) + first + 1.0;
  XSI_CHECK(xs_fluid_periodic(&st, p, K, V, hi));
  for (int i = 0; i < 8 && st.t_iss_ns > (1.0 + tol) * first; i++) {
    hi *= 2;
    XSI_CHECK(xs_fluid_periodic(&st, p, K, V, hi));
  }
  if (st.t_iss_ns > (1.0 + tol) * first) {
    *G_ns = INFINITY;
    return XS_OK;
  }
  for (int i = 0; i < 60 && hi - lo > 1e-3 * hi; i++) {
    double mid = 0.5 * (lo + hi);
    XSI_CHECK(xs_fluid_periodic(&st, p, K, V, mid));
    if (st.t_iss_ns <= (1.0 + tol) * first)
      hi = mid;
    else
      lo = mid;
  }
  *G_ns = hi;
  return XS_OK;
}

/* The G value (ns) the grid of (K, V) surrounds: the predicted settle gap (the smallest free
 * gap when one exists; when the burst overflows the stage from idle, the gap after which
 * every burst is again like the first); the drain time V/R if none; at least 1 us. */
static xs_result centre_gap(double* G, const xs_link_profile* p, int K, double V) {
  double g = 0;
  XSI_CHECK(xs_calib_predicted_settle_gap(&g, p, (double)K, V, 0.05));
  if (!isfinite(g)) g = V / xsi_drain_rate(p, (double)K);
  *G = g < 1000.0 ? 1000.0 : g;
  return XS_OK;
}

static double sum_est(const plan_ctx* c) {
  double s = 0;
  for (size_t i = 0; i < c->n; i++)
    s += c->out[i].est_ns;
  return s;
}

static xs_result plan_probes(plan_ctx* c) {
  const int full = c->opt->level == XS_CALIB_FULL;
  static const int kq[] = {16, 32, 132}, kf[] = {8, 16, 32, 64, 132};
  int ks[8];
  int nk = full ? k_set(ks, kf, 5, c->opt->sm_count) : k_set(ks, kq, 3, c->opt->sm_count);
  static const double vq[] = {262144, 1048576, 4194304};
  static const double vf[] = {131072, 262144, 524288, 1048576, 2097152, 4194304, 8388608};
  const double* vs = full ? vf : vq;
  int nv = full ? 7 : 3;
  double maxV = c->opt->max_V;
  /* T0: 4-burst sequences with a gap long enough to drain each burst (2 V/R + 10 us). */
  for (int i = 0; i < nk; i++)
    for (int j = 0; j < nv; j++)
      if (vs[j] <= maxV) {
        double G = 2.0 * vs[j] / xsi_drain_rate(c->p, (double)ks[i]) + 10e3;
        XSI_CHECK(add_point(c, XS_PHASE_T0, ks[i], vs[j], G < 20e3 ? 20e3 : G, 4, 0, 0));
      }
  /* R: long back-to-back sequences of 4 MiB bursts. */
  double vr = maxV < 4194304.0 ? maxV : 4194304.0;
  for (int i = 0; i < nk; i++)
    XSI_CHECK(add_point(c, XS_PHASE_R, ks[i], vr, 0, full ? 48 : 24, 0, 0));
  /* Q: single bursts, V geometric from 64 KiB to 16 MiB, 3 repetitions each (quick: the two
   * smallest K and the largest, whose room decides whether a whole-GPU burst goes free).
   * --full steps by 2^(1/3) (19 sizes): the knee of K = 132 lies between 3 and 3.6 MiB on the
   * H200, where 2^(2/3) steps (2.5, 4 MiB) left the fit to guess it. */
  int nq = full ? 19 : 9;
  for (int i = 0; i < nk; i++) {
    if (!full && i > 1 && i != nk - 1) continue;
    for (int j = 0; j < nq; j++) {
      double V = 65536.0 * pow(256.0, (double)j / (nq - 1));
      V = 16.0 * ks[i] * ceil(V / (16.0 * ks[i]));
      if (V > maxV) continue;
      for (int r = 0; r < 3; r++)
        XSI_CHECK(add_point(c, XS_PHASE_Q, ks[i], V, 0, 1, r, 0));
    }
  }
  return XS_OK;
}

/* The grid: for each (K, V), G = 0, a quarter of the centre, then +-50% around it in steps of
 * 10% of the centre, and twice the centre; every gap measured `reps` times (the analysis fits
 * and evaluates the per-configuration median over repetitions, xs_calib_rows_median). */
static xs_result plan_grid(plan_ctx* c) {
  const int full = c->opt->level == XS_CALIB_FULL;
  static const int kq[] = {16, 32, 64, 132}, kf[] = {8, 16, 32, 64, 132};
  int ks[8];
  int nk = full ? k_set(ks, kf, 5, c->opt->sm_count) : k_set(ks, kq, 4, c->opt->sm_count);
  static const double vq[] = {262144, 524288, 1048576, 4194304};
  static const double vf[] = {262144, 524288, 1048576, 2097152, 4194304, 8388608};
  const double* vs = full ? vf : vq;
  int nv = full ? 6 : 4;
  static const double fs[] = {0,   0.25, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
                              1.1, 1.2,  1.3, 1.4, 1.5, 2.0};
  const int nf = (int)(sizeof fs / sizeof fs[0]);
  const int reps = full ? XS_CALIB_REPS_FULL : XS_CALIB_REPS_QUICK;
  int base_bursts = full ? 48 : 32;
  for (int i = 0; i < nk; i++)
    for (int j = 0; j < nv; j++) {
      if (vs[j] > c->opt->max_V) continue;
      double Gc = 0;
      XSI_CHECK(centre_gap(&Gc, c->p, ks[i], vs[j]));
      for (int f = 0; f < nf; f++) {
        double G = fs[f] * Gc;
        xs_steady st;
        XSI_CHECK(xs_fluid_periodic(&st, c->p, (double)ks[i], vs[j], G));
        long need = 2 * st.bursts_to_steady + 4;
        int bursts = need > base_bursts ? (need > 64 ? 64 : (int)need) : base_bursts;
        for (int r = 0; r < reps; r++)
          XSI_CHECK(add_point(c, XS_PHASE_GRID, ks[i], vs[j], G, bursts, r, Gc));
      }
    }
  /* Repeatability: the anchors' 16 CTAs x 1 MiB back to back, 5 times: the drain regime
   * (steady aggregate T_iss = V/R, about 13x T0 on the H200 host path), where the aggregate
   * issue time is the drain and must repeat; the own durations of unfairly served producers
   * do not (the second H200 run: 31% spread). */
  int kr = c->opt->sm_count < 16 ? c->opt->sm_count : 16;
  double vr = c->opt->max_V < 1048576.0 ? c->opt->max_V : 1048576.0;
  for (int r = 0; r < 5; r++)
    XSI_CHECK(add_point(c, XS_PHASE_REPEAT, kr, vr, 0, 32, r, 0));
  return XS_OK;
}

/* 1 if grid points i and j belong to the same (K, V). */
static int same_group(const xs_sweep_point* a, const xs_sweep_point* b) {
  return a->phase == XS_PHASE_GRID && b->phase == XS_PHASE_GRID && a->K == b->K && a->V == b->V;
}

/* Side of a grid point relative to its centre: -1 below, +1 above, 0 for G = 0 and the centre
 * (never dropped). */
static int side(const xs_sweep_point* p) {
  if (p->G <= 0 || fabs(p->G - p->G_centre) <= 1e-9 * p->G_centre) return 0;
  return p->G < p->G_centre ? -1 : 1;
}

static void drop(plan_ctx* c, size_t i) {
  memmove(&c->out[i], &c->out[i + 1], (c->n - i - 1) * sizeof c->out[0]);
  c->n--;
}

/* Keep the plan within the budget: (1) halve the bursts of grid sequences (not below 8);
 * then drop repetitions of the grid (the highest repetition index first);
 * (2) drop grid points farthest from their centre, keeping G = 0, the centre and at least one
 * point on each side of it; (3) drop whole (K, V) groups, the most expensive first, keeping at
 * least three. Deterministic (ties go to the first point). */
static void fit_budget(plan_ctx* c, double budget) {
  if (sum_est(c) <= budget) return;
  for (size_t i = 0; i < c->n; i++) {
    xs_sweep_point* pt = &c->out[i];
    if (pt->phase == XS_PHASE_GRID && pt->bursts > 8) {
      double per = (pt->est_ns - c->overhead) / pt->bursts;
      pt->bursts = pt->bursts / 2 < 8 ? 8 : pt->bursts / 2;
      pt->est_ns = c->overhead + per * pt->bursts;
    }
  }
  /* repetitions go before distinct gaps: drop the highest repetition index of the grid */
  for (int top = 1; sum_est(c) > budget && top > 0;) {
    top = 0;
    for (size_t i = 0; i < c->n; i++)
      if (c->out[i].phase == XS_PHASE_GRID && c->out[i].rep > top) top = c->out[i].rep;
    if (!top) break;
    for (size_t i = c->n; i-- > 0;)
      if (c->out[i].phase == XS_PHASE_GRID && c->out[i].rep == top) drop(c, i);
  }
  while (sum_est(c) > budget) {
    size_t worst = c->n;
    double wd = -1;
    for (size_t i = 0; i < c->n; i++) {
      const xs_sweep_point* pt = &c->out[i];
      int sd = pt->phase == XS_PHASE_GRID ? side(pt) : 0;
      if (!sd) continue;
      int others = 0;
      for (size_t j = 0; j < c->n; j++)
        others += j != i && same_group(pt, &c->out[j]) && side(&c->out[j]) == sd;
      double d = fabs(log(pt->G / pt->G_centre));
      if (others && d > wd + 1e-12) wd = d, worst = i;
    }
    if (worst == c->n) break;
    drop(c, worst);
  }
  while (sum_est(c) > budget) {
    size_t groups = 0, worst = c->n;
    double wsum = -1;
    for (size_t i = 0; i < c->n; i++) {
      int first = c->out[i].phase == XS_PHASE_GRID;
      for (size_t j = 0; j < i && first; j++)
        first = !same_group(&c->out[i], &c->out[j]);
      if (!first) continue;
      groups++;
      double s = 0;
      for (size_t j = i; j < c->n; j++)
        s += same_group(&c->out[i], &c->out[j]) ? c->out[j].est_ns : 0;
      if (s > wsum + 1e-9) wsum = s, worst = i;
    }
    if (groups <= 3 || worst == c->n) return;
    xs_sweep_point key = c->out[worst];
    for (size_t i = c->n; i-- > 0;)
      if (same_group(&key, &c->out[i])) drop(c, i);
  }
}

xs_result xs_sweep_plan(xs_sweep_point* out, size_t cap, size_t* n, int grid,
                        const xs_sweep_options* opt, const xs_link_profile* centre) {
  XSI_ARG(out && n && opt && centre, "xs_sweep_plan: NULL argument");
  XSI_ARG(opt->size == sizeof(xs_sweep_options), "xs_sweep_plan: opt->size mismatch (use "
                                                 "XS_SWEEP_OPTIONS_INITIALIZER)");
  XSI_ARG(opt->sm_count >= 1, "xs_sweep_plan: sm_count must be >= 1 (got %d)", opt->sm_count);
  XSI_ARG(opt->max_V >= 65536.0, "xs_sweep_plan: max_V must be >= 64 KiB (got %g)", opt->max_V);
  XSI_ARG(opt->budget_ns >= 0 && opt->overhead_ns >= 0, "xs_sweep_plan: negative budget");
  XSI_ARG(opt->level == XS_CALIB_QUICK || opt->level == XS_CALIB_FULL,
          "xs_sweep_plan: bad level %d", (int)opt->level);
  XSI_CHECK(xs_profile_validate(centre));
  plan_ctx c = {out, cap, 0, opt, centre, opt->overhead_ns > 0 ? opt->overhead_ns : 400e3};
  *n = 0;
  if (grid)
    XSI_CHECK(plan_grid(&c));
  else
    XSI_CHECK(plan_probes(&c));
  double budget =
      opt->budget_ns > 0 ? opt->budget_ns : (opt->level == XS_CALIB_FULL ? 300e9 : 60e9);
  /* The probes and the grid share the budget: probes 30%, grid 50%, 20% reserve. */
  fit_budget(&c, budget * (grid ? 0.5 : 0.3));
  *n = c.n;
  return XS_OK;
}

/* -------------------------------------------------------------------- analysis ----- */

/* Least-squares line through (x[i], y[i]), i in [a, b): residual sum of squares. */
static double line_sse(const double* x, const double* y, size_t a, size_t b) {
  double n = (double)(b - a), sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = a; i < b; i++)
    sx += x[i], sy += y[i], sxx += x[i] * x[i], sxy += x[i] * y[i];
  double den = n * sxx - sx * sx;
  double slope = den != 0 ? (n * sxy - sx * sy) / den : 0;
  double icpt = (sy - slope * sx) / n;
  double sse = 0;
  for (size_t i = a; i < b; i++) {
    double r = y[i] - (icpt + slope * x[i]);
    sse += r * r;
  }
  return sse;
}

xs_result xs_calib_knee(double* v_knee, double* q_bytes, const double* V, const double* t_ns,
                        size_t n, double R) {
  XSI_ARG(v_knee && q_bytes && V && t_ns, "xs_calib_knee: NULL argument");
  XSI_ARG(n >= 4, "xs_calib_knee: need >= 4 points (got %zu)", n);
  XSI_ARG(R > 0 && isfinite(R), "xs_calib_knee: R must be > 0 (got %g)", R);
  for (size_t i = 0; i < n; i++) {
    XSI_ARG(isfinite(V[i]) && isfinite(t_ns[i]), "xs_calib_knee: point %zu not finite", i);
    XSI_ARG(i == 0 || V[i] > V[i - 1], "xs_calib_knee: V must increase (point %zu)", i);
  }
  /* The knee is shared by both segments: segment 1 = [0, k], segment 2 = [k, n). */
  size_t best = 1;
  double best_sse = INFINITY;
  for (size_t k = 1; k + 1 < n; k++) {
    double sse = line_sse(V, t_ns, 0, k + 1) + line_sse(V, t_ns, k, n);
    if (sse < best_sse) best_sse = sse, best = k;
  }
  *v_knee = V[best];
  double q = V[best] - R * t_ns[best];
  *q_bytes = q > 0 ? q : 0;
  return XS_OK;
}

xs_result xs_calib_settle_gap(double* g_meas, const double* g, const double* ss, size_t n,
                              double t0, double tol) {
  XSI_ARG(g_meas && g && ss, "xs_calib_settle_gap: NULL argument");
  XSI_ARG(n >= 1 && t0 > 0 && isfinite(t0), "xs_calib_settle_gap: need n >= 1 and t0 > 0");
  if (!(tol > 0)) tol = 0.05;
  for (size_t i = 1; i < n; i++)
    XSI_ARG(g[i] >= g[i - 1], "xs_calib_settle_gap: gaps must ascend (index %zu)", i);
  *g_meas = NAN;
  for (size_t i = n; i-- > 0;) {
    if (!(ss[i] <= (1.0 + tol) * t0)) break;
    *g_meas = g[i];
  }
  return XS_OK;
}

/* ------------------------------------------------- reading rows back, medians ----- */

static int cmp_dbl(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* Median of v[0..n) (sorted in place); NaN entries are ignored; NaN if none is finite. */
static double med_of(double* v, size_t n) {
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (!isnan(v[i])) v[m++] = v[i];
  if (!m) return NAN;
  qsort(v, m, sizeof *v, cmp_dbl);
  return m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
}

/* A numeric field that may be "nan" (t_ret_ns, t_iss_cyc_ns of some rows). */
static xs_result csv_num_or_nan(double* out, const xsi_csv* csv, size_t r, long col,
                                const char* path) {
  const char* f = csv->rows[r][col];
  char* end = NULL;
  double x = strtod(f, &end);
  if (!f[0] || !end || *end != '\0')
    return xsi_set_error(XS_ERR_PARSE, "%s:%d: field '%s': '%.40s' is not a number", path,
                         csv->row_line[r], csv->header[col], f);
  *out = x;
  return XS_OK;
}

static void copy_field(char* dst, size_t cap, const char* src) {
  snprintf(dst, cap, "%.*s", (int)(cap - 1), src);
}

xs_result xs_calib_csv_read(xs_calib_row** rows, size_t* n, const char* path) {
  XSI_ARG(rows && n && path, "xs_calib_csv_read: NULL argument");
  *rows = NULL, *n = 0;
  static const char* const cols[] = {"transport",      "K",        "V_bytes",  "gap_ns",
                                     "burst_index",    "t_iss_ns", "t_iss_mean_ns",
                                     "gap_nominal_ns", "t_ret_ns", "t_iss_cyc_ns",
                                     "flavour",        "mode",     "gap_mode", "phase",
                                     "point",          "rep"};
  long c[16];
  char* text = NULL;
  size_t len = 0;
  xsi_csv* csv = NULL;
  xs_calib_row* out = NULL;
  xs_result res = XS_OK;
  XSI_CHECK_GOTO(xsi_read_file(&text, &len, path, 0), res, done);
  XSI_CHECK_GOTO(xsi_csv_parse(&csv, text, len, path, 10000000), res, done);
  for (int j = 0; j < 16; j++)
    XSI_CHECK_GOTO(xsi_csv_require(&c[j], csv, cols[j]), res, done);
  /* optional (CSVs written before the aggregate definition lack them) */
  static const char* const xcols[6] = {"t_own_max_ns", "t_own_mean_ns", "t_skew_ns",
                                       "e_end_ns",     "m_end_ns",      "gap_before_ns"};
  long cx[6];
  for (int j = 0; j < 6; j++)
    cx[j] = xsi_csv_col(csv, xcols[j]);
  long cseq = xsi_csv_col(csv, "seq"), cper = xsi_csv_col(csv, "period_ns");
  out = (xs_calib_row*)calloc(csv->nrows ? csv->nrows : 1, sizeof *out);
  if (!out) XSI_FAIL(res, XS_ERR_NO_MEMORY, done, "%s: %zu rows", path, csv->nrows);
  for (size_t r = 0; r < csv->nrows; r++) {
    xs_calib_row* w = &out[r];
    long long k = 0, b = 0, pt = 0, rp = 0;
    copy_field(w->transport, sizeof w->transport, csv->rows[r][c[0]]);
    XSI_CHECK_GOTO(xsi_csv_int(&k, csv, r, c[1], 1, 1 << 20), res, done);
    XSI_CHECK_GOTO(xsi_csv_number(&w->V, csv, r, c[2]), res, done);
    XSI_CHECK_GOTO(csv_num_or_nan(&w->gap_ns, csv, r, c[3], path), res, done);
    XSI_CHECK_GOTO(xsi_csv_int(&b, csv, r, c[4], 0, 1000000000LL), res, done);
    XSI_CHECK_GOTO(xsi_csv_number(&w->t_iss_ns, csv, r, c[5]), res, done);
    XSI_CHECK_GOTO(csv_num_or_nan(&w->t_iss_mean_ns, csv, r, c[6], path), res, done);
    XSI_CHECK_GOTO(csv_num_or_nan(&w->gap_nominal_ns, csv, r, c[7], path), res, done);
    XSI_CHECK_GOTO(csv_num_or_nan(&w->t_ret_ns, csv, r, c[8], path), res, done);
    XSI_CHECK_GOTO(csv_num_or_nan(&w->t_iss_cyc_ns, csv, r, c[9], path), res, done);
    copy_field(w->flavour, sizeof w->flavour, csv->rows[r][c[10]]);
    copy_field(w->mode, sizeof w->mode, csv->rows[r][c[11]]);
    copy_field(w->gap_mode, sizeof w->gap_mode, csv->rows[r][c[12]]);
    copy_field(w->phase, sizeof w->phase, csv->rows[r][c[13]]);
    XSI_CHECK_GOTO(xsi_csv_int(&pt, csv, r, c[14], -1, 1LL << 40), res, done);
    XSI_CHECK_GOTO(xsi_csv_int(&rp, csv, r, c[15], -1, 1 << 20), res, done);
    w->K = (int)k, w->burst_index = (long)b, w->point = (long)pt, w->rep = (int)rp;
    double* extra[6] = {&w->t_own_max_ns, &w->t_own_mean_ns, &w->t_skew_ns,
                        &w->e_end_ns,     &w->m_end_ns,      &w->gap_before_ns};
    for (int j = 0; j < 6; j++) {
      *extra[j] = NAN;
      if (cx[j] >= 0) XSI_CHECK_GOTO(csv_num_or_nan(extra[j], csv, r, cx[j], path), res, done);
    }
    w->seq = 0, w->period_ns = NAN;
    if (cseq >= 0 && csv->rows[r][cseq][0]) {
      long long sq = 0;
      XSI_CHECK_GOTO(xsi_csv_int(&sq, csv, r, cseq, 0, 1LL << 50), res, done);
      w->seq = (long)sq;
    }
    if (cper >= 0) XSI_CHECK_GOTO(csv_num_or_nan(&w->period_ns, csv, r, cper, path), res, done);
  }
  *rows = out, *n = csv->nrows;
  out = NULL;
done:
  free(out);
  xsi_csv_free(csv);
  free(text);
  return res;
}

static int same_cfg(const xs_calib_row* a, const xs_calib_row* b) {
  return a->K == b->K && a->V == b->V && a->gap_nominal_ns == b->gap_nominal_ns &&
         !strcmp(a->phase, b->phase) && !strcmp(a->transport, b->transport);
}

xs_result xs_calib_rows_median(xs_calib_row** out, size_t* nout, const xs_calib_row* rows,
                               size_t n) {
  XSI_ARG(out && nout && (rows || n == 0), "xs_calib_rows_median: NULL argument");
  *out = NULL, *nout = 0;
  xs_calib_row* o = (xs_calib_row*)calloc(n ? n : 1, sizeof *o);
  uint8_t* used = (uint8_t*)calloc(n ? n : 1, 1);
  size_t* grp = (size_t*)malloc((n ? n : 1) * sizeof *grp);
  double* v = (double*)malloc((n ? n : 1) * sizeof *v);
  if (!o || !used || !grp || !v) {
    free(o), free(used), free(grp), free(v);
    return xsi_set_error(XS_ERR_NO_MEMORY, "calibration medians: %zu rows", n);
  }
  /* NOTE: O(n * groups) grouping by a scan from each first row; the rows of one configuration
   * are contiguous per repetition, so the scan is short in practice. */
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (used[i]) continue;
    size_t g = 0;
    for (size_t j = i; j < n; j++)
      if (!used[j] && rows[j].burst_index == rows[i].burst_index && same_cfg(&rows[i], &rows[j]))
        grp[g++] = j, used[j] = 1;
    xs_calib_row r = rows[i];
#define XS_MED_FIELD(f)                                                                            \
  do {                                                                                             \
    for (size_t k = 0; k < g; k++)                                                                 \
      v[k] = rows[grp[k]].f;                                                                       \
    r.f = med_of(v, g);                                                                            \
  } while (0)
    XS_MED_FIELD(t_iss_ns);
    XS_MED_FIELD(t_iss_mean_ns);
    XS_MED_FIELD(gap_ns);
    XS_MED_FIELD(t_ret_ns);
    XS_MED_FIELD(t_iss_cyc_ns);
    XS_MED_FIELD(t_own_max_ns);
    XS_MED_FIELD(t_own_mean_ns);
    XS_MED_FIELD(t_skew_ns);
    XS_MED_FIELD(e_end_ns);
    XS_MED_FIELD(m_end_ns);
    XS_MED_FIELD(gap_before_ns);
#undef XS_MED_FIELD
    if (r.t_iss_mean_ns > r.t_iss_ns) r.t_iss_mean_ns = r.t_iss_ns;
    r.rep = (int)g;
    o[m++] = r;
  }
  free(used), free(grp), free(v);
  *out = o, *nout = m;
  return XS_OK;
}

/* ------------------------------------------------------------- transitions ----- */

typedef struct tr_seq {
  double gap, first, steady, pss, pfirst;
  int nb;
} tr_seq;

static int cmp_seq(const void* a, const void* b) {
  double x = ((const tr_seq*)a)->gap, y = ((const tr_seq*)b)->gap;
  return (x > y) - (x < y);
}

/* The model's counterpart of one measured sequence: nb bursts from idle with gap G between
 * them; first burst and the median of the second half (the same statistic as the data). */
static xs_result predict_seq(double* first, double* steady, const xs_link_profile* p, double K,
                             double V, double G, int nb, xs_burst* bs, xs_burst_result* br) {
  for (int b = 0; b < nb; b++)
    bs[b].V = V, bs[b].gap_ns = b ? G : 0.0;
  XSI_CHECK(xs_fluid_simulate(br, NULL, p, K, bs, (size_t)nb));
  double v[XS_XBENCH_MAX_BURSTS];
  int h = nb / 2, m = 0;
  for (int b = h; b < nb; b++)
    v[m++] = br[b].t_iss_ns;
  *first = br[0].t_iss_ns;
  *steady = med_of(v, (size_t)m);
  return XS_OK;
}

/* The same for a clock-scheduled sequence of period P: burst b is scheduled at b*P and starts
 * at max(b*P, end of burst b-1); the gap before it is what is left of the wait (the model run
 * under the schedule the kernel used). */
static xs_result predict_seq_clock(double* first, double* steady, const xs_link_profile* p,
                                   double K, double V, double P, int nb, xs_burst_result* br) {
  xsi_link l = xsi_link_of(p, K);
  double E = 0.0, bl = 0.0;
  for (int b = 0; b < nb; b++) {
    double Sb = b * P, g = b ? fmax(0.0, Sb - E) : 0.0, e = 0.0;
    bl -= fmin(bl, l.R * g);
    br[b].t_iss_ns = xsi_burst_time(&l, bl, V, &e, NULL, NULL);
    bl = e;
    E = (b ? fmax(Sb, E) : Sb) + br[b].t_iss_ns;
  }
  double v[XS_XBENCH_MAX_BURSTS];
  int h = nb / 2, m = 0;
  for (int b = h; b < nb; b++)
    v[m++] = br[b].t_iss_ns;
  *first = br[0].t_iss_ns;
  *steady = med_of(v, (size_t)m);
  return XS_OK;
}

xs_result xs_calib_predict_clock(double* first_ns, double* steady_ns, const xs_link_profile* p,
                                 double K, double V, double period_ns, int bursts) {
  XSI_ARG(p, "xs_calib_predict_clock: NULL profile");
  XSI_ARG(K >= 1 && V >= 0 && period_ns >= 0 && bursts >= 2 && bursts <= XS_XBENCH_MAX_BURSTS,
          "xs_calib_predict_clock: bad K %g, V %g, period %g or bursts %d", K, V, period_ns, bursts);
  XSI_CHECK(xs_profile_validate(p));
  xs_burst_result* br = (xs_burst_result*)malloc((size_t)bursts * sizeof *br);
  if (!br) return xsi_set_error(XS_ERR_NO_MEMORY, "xs_calib_predict_clock: %d bursts", bursts);
  double f = 0, st = 0;
  xs_result res = predict_seq_clock(&f, &st, p, K, V, period_ns, bursts, br);
  free(br);
  if (res == XS_OK) {
    if (first_ns) *first_ns = f;
    if (steady_ns) *steady_ns = st;
  }
  return res;
}

xs_result xs_calib_transitions(xs_calib_transition* out, int cap, int* n, int* within10,
                               int* in_grid, const xs_calib_row* med, size_t nmed,
                               const xs_link_profile* p, double tol) {
  XSI_ARG(out && n && (med || nmed == 0) && p && cap >= 0, "xs_calib_transitions: NULL argument");
  XSI_CHECK(xs_profile_validate(p));
  if (!(tol > 0)) tol = 0.05;
  int nt = 0, w10 = 0, ing = 0;
  xs_result res = XS_OK;
  tr_seq seqs[128];
  double bv[XS_XBENCH_MAX_BURSTS], gs[128], ss[128], f0[128];
  xs_burst* bs = (xs_burst*)malloc(XS_XBENCH_MAX_BURSTS * sizeof *bs);
  xs_burst_result* br = (xs_burst_result*)malloc(XS_XBENCH_MAX_BURSTS * sizeof *br);
  if (!bs || !br) XSI_FAIL(res, XS_ERR_NO_MEMORY, done, "xs_calib_transitions");
  for (size_t i = 0; i < nmed && nt < cap; i++) {
    const xs_calib_row* a = &med[i];
    if (strcmp(a->phase, "grid") != 0) continue;
    int seen = 0;
    for (int q = 0; q < nt; q++)
      seen |= out[q].K == a->K && out[q].V == a->V;
    if (seen) continue;
    /* the sequences (distinct nominal gaps) of this (K, V) */
    int ns = 0;
    for (size_t j = i; j < nmed && ns < 128; j++) {
      const xs_calib_row* r = &med[j];
      if (strcmp(r->phase, "grid") != 0 || r->K != a->K || r->V != a->V || r->burst_index != 0)
        continue;
      int nb = 0;
      for (size_t k = j; k < nmed && k < j + XS_XBENCH_MAX_BURSTS; k++) {
        const xs_calib_row* x = &med[k];
        if (x->burst_index == 0 && k > j) break;
        if (!same_cfg(x, r) || x->burst_index != nb) break;
        bv[nb++] = x->t_iss_ns;
      }
      tr_seq* s = &seqs[ns++];
      s->gap = r->gap_ns > 0 && isfinite(r->gap_ns) ? r->gap_ns : 0.0;
      if (nb == 1) s->gap = r->gap_nominal_ns;
      s->first = bv[0];
      s->nb = nb;
      int h = nb / 2;
      s->steady = med_of(bv + h, (size_t)(nb - h));
      if (r->seq >= 1 && r->period_ns > 0) /* clock mode: the model runs the same schedule */
        XSI_CHECK_GOTO(predict_seq_clock(&s->pfirst, &s->pss, p, a->K, a->V, r->period_ns, nb, br),
                       res, done);
      else
        XSI_CHECK_GOTO(predict_seq(&s->pfirst, &s->pss, p, a->K, a->V, s->gap, nb, bs, br), res,
                       done);
    }
    if (!ns) continue;
    qsort(seqs, (size_t)ns, sizeof *seqs, cmp_seq);
    xs_calib_transition* tr = &out[nt++];
    memset(tr, 0, sizeof *tr);
    tr->K = a->K, tr->V = a->V, tr->n_gaps = ns;
    for (int k = 0; k < ns; k++)
      gs[k] = seqs[k].gap, f0[k] = seqs[k].first;
    tr->t0_ns = med_of(f0, (size_t)ns);
    tr->g_meas_ns = tr->g_pred_grid_ns = tr->rel_err = NAN;
    for (int k = 0; k < ns; k++)
      ss[k] = seqs[k].steady;
    tr->t_ss0_ns = ss[0];
    if (tr->t0_ns > 0) xs_calib_settle_gap(&tr->g_meas_ns, gs, ss, (size_t)ns, tr->t0_ns, tol);
    for (int k = 0; k < ns; k++)
      ss[k] = seqs[k].pss;
    if (seqs[0].pfirst > 0)
      xs_calib_settle_gap(&tr->g_pred_grid_ns, gs, ss, (size_t)ns, seqs[0].pfirst, tol);
    if (xs_calib_predicted_settle_gap(&tr->g_pred_ns, p, a->K, a->V, tol) != XS_OK)
      tr->g_pred_ns = NAN;
    if (xs_plan_min_free_gap(&tr->g_free_ns, p, a->K, a->V) != XS_OK) tr->g_free_ns = NAN;
    {
      /* a burst that overflows Q(K) from idle has no backpressure-free gap: its "transition"
       * is only the gap after which the stage is empty again; reported, not scored */
      double q = 0;
      tr->cap_bound = xs_capacity(&q, p, a->K) == XS_OK && a->V > q;
    }
    tr->in_grid = !tr->cap_bound && isfinite(tr->g_meas_ns) && tr->g_meas_ns > gs[0];
    if (isfinite(tr->g_meas_ns) && isfinite(tr->g_pred_grid_ns))
      tr->rel_err =
          fabs(tr->g_pred_grid_ns - tr->g_meas_ns) / (tr->g_meas_ns > 1.0 ? tr->g_meas_ns : 1.0);
    ing += tr->in_grid;
    w10 += tr->in_grid && tr->rel_err <= 0.10;
  }
  *n = nt;
  if (within10) *within10 = w10;
  if (in_grid) *in_grid = ing;
done:
  if (res == XS_OK) xsi_clear_error();
  free(bs);
  free(br);
  return res;
}

/* --------------------------------------------------------------- the analysis ----- */

/* Steady T_iss (median of the second half) of each sequence of `phase` in raw rows; one value
 * per sequence (point), in order; at most cap. */
/* Per sequence of `phase`: the median of the second half's T_iss (+ the gap after each burst
 * with `period`), or with `total` the sum of all its bursts' T_iss (the per-point quantity). */
static size_t seq_stat(double* out, double* V, int* K, size_t cap, const xs_calib_row* rows,
                       size_t n, const char* transport, const char* phase, int period, int total) {
  size_t m = 0;
  double v[XS_XBENCH_MAX_BURSTS];
  for (size_t i = 0; i < n && m < cap;) {
    const xs_calib_row* a = &rows[i];
    size_t j = i;
    int nb = 0;
    while (j < n && rows[j].point == a->point && nb < XS_XBENCH_MAX_BURSTS) {
      /* the gap after the burst: clock rows carry each burst's own (the next row's gap
       * before), the others the sequence's mean */
      double gap = rows[j].gap_ns;
      if (rows[j].seq >= 1)
        gap = j + 1 < n && rows[j + 1].point == a->point ? rows[j + 1].gap_before_ns : 0.0;
      v[nb++] = period ? rows[j].t_iss_ns + (isfinite(gap) ? gap : 0) : rows[j].t_iss_ns;
      j++;
    }
    if (!strcmp(a->phase, phase) && (!transport || !strcmp(a->transport, transport))) {
      int h = nb / 2;
      double sum = 0;
      for (int b = 0; b < nb; b++) sum += v[b];
      out[m] = total ? sum : med_of(v + h, (size_t)(nb - h));
      if (V) V[m] = a->V;
      if (K) K[m] = a->K;
      m++;
    }
    i = j > i ? j : i + 1;
  }
  return m;
}

xs_result xs_calib_analyse(xs_link_profile* profile, xs_calib_report* rep,
                           xs_calib_row** med_out, size_t* nmed_out, const xs_calib_row* rows,
                           size_t n, const char* transport, double holdout_fraction,
                           uint64_t seed) {
  return xs_calib_analyse_ref(profile, rep, med_out, nmed_out, rows, n, transport,
                              holdout_fraction, seed, NULL);
}

xs_result xs_calib_analyse_ref(xs_link_profile* profile, xs_calib_report* rep,
                               xs_calib_row** med_out, size_t* nmed_out, const xs_calib_row* rows,
                               size_t n, const char* transport, double holdout_fraction,
                               uint64_t seed, const xs_link_profile* reference) {
  XSI_ARG(profile && rep && (rows || n == 0), "xs_calib_analyse: NULL argument");
  XSI_ARG(holdout_fraction >= 0 && holdout_fraction <= 0.9,
          "xs_calib_analyse: holdout_fraction must be in [0, 0.9] (got %g)", holdout_fraction);
  xs_result res = XS_OK;
  xs_calib_row* med = NULL;
  size_t nmed = 0;
  xs_sample* smp = NULL;
  xs_dataset* ds = NULL;
  double* tmp = NULL;
  uint8_t* hold = NULL;
  rep->ref_scored = 0;
  if (reference) XSI_CHECK_GOTO(xs_profile_validate(reference), res, done);
  XSI_CHECK_GOTO(xs_calib_rows_median(&med, &nmed, rows, n), res, done);
  smp = (xs_sample*)calloc(nmed ? nmed : 1, sizeof *smp);
  tmp = (double*)malloc((n ? n : 1) * 2 * sizeof *tmp);
  hold = (uint8_t*)calloc(nmed ? nmed : 1, 1);
  if (!smp || !tmp || !hold)
    XSI_FAIL(res, XS_ERR_NO_MEMORY, done, "xs_calib_analyse: %zu rows", nmed);
  size_t ns = 0;
  for (size_t i = 0; i < nmed; i++) {
    const xs_calib_row* w = &med[i];
    if (transport && strcmp(w->transport, transport) != 0) continue;
    if (!(w->t_iss_ns > 0) || !isfinite(w->V) || w->V <= 0) continue;
    xs_sample* s = &smp[ns++];
    snprintf(s->transport, sizeof s->transport, "%s", w->transport);
    s->K = w->K, s->V = w->V;
    /* a single burst has no gap; a sequence's gap is the measured one */
    s->G = isfinite(w->gap_ns) && w->gap_ns > 0 ? w->gap_ns : 0.0;
    s->burst_index = w->burst_index, s->t_iss_ns = w->t_iss_ns;
    s->t_iss_mean_ns = w->t_iss_mean_ns > 0 && isfinite(w->t_iss_mean_ns) ? w->t_iss_mean_ns : 0;
    /* clock mode: one measured sequence (the medians over the repetitions, burst by burst),
     * predicted with its own per-burst gaps */
    if (w->seq >= 1 && isfinite(w->gap_before_ns) && w->gap_before_ns >= 0)
      s->seq = w->seq, s->gap_before_ns = w->gap_before_ns;
  }
  rep->n_median_rows = ns;
  XSI_CHECK_GOTO(xs_dataset_from_samples(&ds, smp, ns), res, done);
  {
    xs_fit_options fo = XS_FIT_OPTIONS_INITIALIZER;
    fo.holdout_fraction = holdout_fraction;
    fo.seed = seed;
    fo.transport = transport;
    XSI_CHECK_GOTO(xs_model_fit(profile, &rep->fit, hold, ds, &fo), res, done);
  }
  if (reference) { /* the same held-out rows and points as rep->fit's */
    XSI_CHECK_GOTO(xs_model_score(&rep->ref, ds, reference, hold, 1), res, done);
    rep->ref_scored = 1;
  }
  XSI_CHECK_GOTO(xs_calib_transitions(rep->trans, XS_CALIB_MAX_PAIRS, &rep->ntrans,
                                      &rep->trans_within_10, &rep->trans_in_grid, med, nmed,
                                      profile, 0.05),
                 res, done);
  rep->trans_cap_bound = 0;
  for (int q = 0; q < rep->ntrans; q++)
    rep->trans_cap_bound += rep->trans[q].cap_bound;
  {
    /* no X-Stage: even at its smallest gap no pair's steady T_iss is far above its T0 (a
     * stall multiplies it: 16 x 1 MiB back to back on the host path is 13x T0; HBM stays
     * within +-20%, which is where a 5% settle rule only sees noise) */
    int flat = 0;
    for (int q = 0; q < rep->ntrans; q++)
      flat += rep->trans[q].t0_ns > 0 && rep->trans[q].t_ss0_ns <= 1.25 * rep->trans[q].t0_ns;
    rep->no_xstage = rep->ntrans > 0 && flat == rep->ntrans;
  }
  /* repeatability: the steady T_iss of each "repeat" sequence */
  {
    size_t m = seq_stat(tmp, NULL, NULL, 5, rows, n, transport, "repeat", 0, 0);
    double mn = INFINITY, mx = 0;
    for (size_t k = 0; k < m; k++) {
      rep->repeat_ss[k] = tmp[k];
      mn = tmp[k] < mn ? tmp[k] : mn, mx = tmp[k] > mx ? tmp[k] : mx;
    }
    for (size_t i = 0; i < n && m; i++)
      if (!strcmp(rows[i].phase, "repeat") && (!transport || !strcmp(rows[i].transport, transport))) {
        rep->repeat_K = rows[i].K, rep->repeat_V = rows[i].V, rep->repeat_G = rows[i].gap_nominal_ns;
        break;
      }
    rep->repeat_spread = m >= 2 && mn > 0 ? mx / mn - 1.0 : NAN;
    m = seq_stat(tmp, NULL, NULL, 5, rows, n, transport, "repeat", 0, 1);
    mn = INFINITY, mx = 0;
    for (size_t k = 0; k < m; k++) {
      rep->repeat_total[k] = tmp[k];
      mn = tmp[k] < mn ? tmp[k] : mn, mx = tmp[k] > mx ? tmp[k] : mx;
    }
    rep->repeat_total_spread = m >= 2 && mn > 0 ? mx / mn - 1.0 : NAN;
  }
  /* R from the back-to-back sequences when the caller has no better figure */
  if (!(rep->R_meas > 0)) {
    size_t m = seq_stat(tmp, tmp + n, NULL, n, rows, n, transport, "R", 1, 0);
    for (size_t k = 0; k < m; k++)
      tmp[k] = tmp[k] > 0 ? tmp[n + k] / tmp[k] : NAN;
    rep->R_meas = m ? med_of(tmp, m) : 0;
    if (!(rep->R_meas > 0)) rep->R_meas = 0;
  }
  if (med_out) {
    *med_out = med, med = NULL;
    if (nmed_out) *nmed_out = nmed;
  }
done:
  xs_dataset_destroy(ds);
  free(smp);
  free(tmp);
  free(hold);
  free(med);
  return res;
}
