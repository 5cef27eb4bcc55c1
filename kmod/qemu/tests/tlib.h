/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The guest tests of the fpgagdr module (issue 5): plain ioctls against
 * the uapi header, run inside a QEMU guest by kmod/qemu/init.sh against
 * the real module and its TEST-ONLY software card.  Every check has a
 * right answer; a failed check prints where and why and fails its test.
 */
#ifndef FGT_TLIB_H
#define FGT_TLIB_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>
#include <uapi/linux/fpgagdr.h>

#define KIB	1024ULL
#define MIB	(1024ULL * KIB)
#define GIB	(1024ULL * MIB)

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* debugfs files of the module, its software card and the nvidia_p2p double */
#define DBG_COUNTERS	"/sys/kernel/debug/fpgagdr/fpgagdr0/counters"
#define DBG_TE		"/sys/kernel/debug/fpgagdr/testeng/"
#define DBG_NV		"/sys/kernel/debug/fpgagdr-test-nvp2p/"
#define NV_PARAM_PERSISTENT "/sys/module/fpgagdr_test_nvp2p/parameters/persistent"

/* Faults of the software card: debugfs testeng/fault_mode */
enum { FAULT_NONE, FAULT_HANG, FAULT_LATE, FAULT_ERROR, FAULT_STUCK };

extern int t_failures;
extern const char *t_dev;
/* software card stop timeouts the tests so far caused on purpose */
extern long long t_expected_stop_timeouts;

void t_fail(const char *file, int line, const char *fmt, ...);

/* CHECK(cond, fmt, ...): record a failure with a reason, carry on */
#define CHECK(cond, ...) do {						\
	if (!(cond))							\
		t_fail(__FILE__, __LINE__, __VA_ARGS__);		\
} while (0)

/* CHECK_ERR(expr, errno): expr returns 0 or -errno */
#define CHECK_ERR(expr, want) do {					\
	int _got = (expr), _want = (want);				\
	if (_got != -_want)						\
		t_fail(__FILE__, __LINE__, "%s: got %d (%s), want -%s",	\
		       #expr, _got, t_errname(-_got), t_errname(_want)); \
} while (0)

#define CHECK_OK(expr)	CHECK_ERR(expr, 0)

/**
 * struct t_case - one test
 * @name: printed in the result line
 * @fn: the test
 */
struct t_case {
	const char *name;
	void (*fn)(void);
};

int t_run(const char *suite, const struct t_case *cases, size_t n);
const char *t_errname(int err);
double t_now(void);

int t_open(void);
int t_status(int fd, struct fpgagdr_status *st);
int t_pin(int fd, __u32 kind, __u64 addr, __u64 len, __u32 *handle);
int t_unpin(int fd, __u32 handle);
int t_xfer(int fd, __u32 dir, __u32 ch, __u32 handle, __u64 off, __u64 card,
	   __u64 len, __u32 timeout_ms);
int t_xfer_full(int fd, struct fpgagdr_transfer *t);
int t_abort(int fd, __u32 dir, __u32 ch);

/**
 * struct t_bg - a transfer run by another thread
 * @fd: control node
 * @handle: pin
 * @dir: direction
 * @ch: channel
 * @off: offset in the pin
 * @card: card address
 * @len: bytes
 * @timeout_ms: 0 means 20000
 * @ret: its result, once joined
 * @th: the thread
 */
struct t_bg {
	int fd;
	__u32 handle;
	__u32 dir;
	__u32 ch;
	__u64 off;
	__u64 card;
	__u64 len;
	__u32 timeout_ms;
	int ret;
	pthread_t th;
};

void t_bg_start(struct t_bg *b);
bool t_bg_start_hung(struct t_bg *b);
int t_bg_join(struct t_bg *b);

void *t_alloc(size_t len);
void t_free(void *p, size_t len);
void t_pattern(void *buf, size_t len, __u64 seed);
bool t_same(const void *got, const void *want, size_t len, const char *what);

long long t_dbg(const char *path, const char *key);
int t_dbg_write(const char *path, const char *value);
void t_fault(int mode, int runs);
bool t_wait_runs(long long before, double seconds);
bool t_nv_present(void);
int t_nv_alloc(__u64 va, __u64 len);
int t_nv_rw(__u64 va, void *buf, size_t len, bool write);
int t_nv_free(__u64 va, __u64 len);

const char *t_pass(void);
bool t_pass_is(const char *name);
int t_card_bdf(char *bdf, size_t len);
bool t_wait_path(const char *path, bool exists, double seconds);
void t_host_cmd(const char *cmd);

/* PCIe errors t_aer_inject() injects at the card's root port */
enum { T_AER_CORRECTABLE, T_AER_NONFATAL, T_AER_FATAL };
bool t_aer_present(void);
int t_aer_inject(int kind);
int t_read_file(const char *path, char *buf, size_t len);
long long t_vmstat(const char *key);

int suite_functional(void);
int suite_host(void);
int suite_nvp2p(void);
int suite_faults(void);
int suite_badioctl(void);
int suite_removal(void);
int suite_stress(void);
int suite_frames(void);
int suite_dmabuf(void);
int suite_recovery(void);
int cmd_badcard(int argc, char **argv);
int cmd_hang(void);
int cmd_pinhold(void);
int cmd_slabsites(int argc, char **argv);

#endif /* FGT_TLIB_H */
