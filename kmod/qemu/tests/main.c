// SPDX-License-Identifier: GPL-2.0
/*
 * fgtest: the guest tests of the fpgagdr module (issue 5).
 *
 *   fgtest SUITE          functional, host, nvp2p, faults, badioctl,
 *                         removal, stress, frames, dmabuf; exit status 0 when
 *                         every test passed
 *   fgtest badcard STATE  the card's user register block breaks the frame
 *                         protocol rule STATE (enum fpgagdr_frames_state)
 *   fgtest pinhold        pin host (and GPU) buffers, transfer, exit with
 *                         them pinned (the load/unload loop's load)
 *   fgtest hang           pin, start a transfer the software card never
 *                         completes and wait in it (the shutdown check)
 *   fgtest slabsites MOD  objects live in slab caches allocated by code of
 *                         module MOD (needs slub_debug=U)
 *   fgtest slabrange A N  the same for call sites in [A, A + N), hex: a
 *                         module's text after it was unloaded
 *
 * FPGAGDR_DEVICE names the control node (default /dev/fpgagdr0).
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tlib.h"

int cmd_pinhold(void)
{
	unsigned char *buf = t_alloc(4 * MIB);
	int fd = t_open(), i, n = 0;
	__u32 h;

	for (i = 0; i < 4; i++, n++) {
		CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST,
			       (unsigned long)buf + i * MIB, MIB, &h));
		CHECK_OK(t_xfer(fd, i % 2, i, h, 0, i * MIB, MIB, 5000));
	}
	if (t_nv_present()) {
		/* allocated by an earlier cycle, or now */
		i = t_nv_alloc(0x7c0000000000ULL, 2 * MIB);
		CHECK(!i || i == -EEXIST, "GPU allocation: %s", t_errname(-i));
	}
	for (i = 0; i < 2 && t_nv_present(); i++, n++) {
		CHECK_OK(t_pin(fd, FPGAGDR_MEM_NV_P2P,
			       0x7c0000000000ULL + i * MIB, MIB, &h));
		CHECK_OK(t_xfer(fd, FPGAGDR_DIR_C2H, i, h, 0, 0, MIB, 5000));
	}
	CHECK(t_dbg(DBG_COUNTERS, "pins") == n, "pins %lld, want %d",
	      t_dbg(DBG_COUNTERS, "pins"), n);
	/* exit with everything pinned: release() must undo it */
	return t_failures ? 1 : 0;
}

int cmd_hang(void)
{
	unsigned char *buf = t_alloc(64 * KIB);
	int fd = t_open();
	__u32 h;

	CHECK_OK(t_pin(fd, FPGAGDR_MEM_HOST, (unsigned long)buf, 64 * KIB, &h));
	t_fault(FAULT_HANG, 1);
	printf("hang: transfer started\n");
	fflush(stdout);
	return t_xfer(fd, FPGAGDR_DIR_C2H, 0, h, 0, 0, 64 * KIB, 60000) ? 1 : 0;
}

/*
 * Functions that allocate for their caller: an object they allocated
 * belongs to the first frame of its stack that is none of these.
 */
static const char *const slab_wrappers[] = {
	"__kmem_cache", "kmem_cache_alloc", "__kmalloc", "kmalloc",
	"kvmalloc", "__kvmalloc", "kmemdup", "kstrdup", "krealloc",
	"kvrealloc", "dma_pool_create",
};

/**
 * struct slab_rec - one record of an alloc_traces file: a header line
 * "COUNT SITE age=... pid=..." and, indented by 8, the stack of the site
 * @count: objects allocated from there and still live
 * @decided: the owner of the objects is known
 * @match: the owner is the one asked for
 */
struct slab_rec {
	long long count;
	bool decided;
	bool match;
};

static bool slab_wrapper(const char *frame)
{
	size_t i;

	while (*frame == ' ')
		frame++;
	for (i = 0; i < ARRAY_SIZE(slab_wrappers); i++)
		if (!strncmp(frame, slab_wrappers[i], strlen(slab_wrappers[i])))
			return true;
	return false;
}

/* Sum the objects whose allocating caller @match accepts. */
static long long slab_count(bool (*match)(const char *frame, const void *arg),
			    const void *arg, bool show)
{
	const char *root = "/sys/kernel/debug/slab";
	char path[512], line[512], *end, *site;
	struct slab_rec r = { 0 };
	struct dirent *de;
	long long total = 0, n;
	DIR *d = opendir(root);
	FILE *f;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/alloc_traces", root,
			 de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			n = strtoll(line, &end, 10);
			if (strncmp(line, "        ", 8) && end != line &&
			    *end == ' ') {
				total += r.match ? r.count : 0;
				r = (struct slab_rec){ .count = n };
				site = end + 1;
			} else {
				site = line;
			}
			if (r.decided || line[0] == '\n' || slab_wrapper(site))
				continue;
			r.decided = true;
			r.match = match(site, arg);
			if (r.match && show)
				printf("  %s: %lld from %s", de->d_name, r.count,
				       site);
		}
		total += r.match ? r.count : 0;
		r = (struct slab_rec){ 0 };
		fclose(f);
	}
	closedir(d);
	return total;
}

static bool match_module(const char *frame, const void *arg)
{
	char tag[80];

	snprintf(tag, sizeof(tag), "[%s]", (const char *)arg);
	return strstr(frame, tag);
}

/* A raw address in [r[0], r[0] + r[1]): code of an unloaded module. */
static bool match_range(const char *frame, const void *arg)
{
	const unsigned long long *r = arg;
	unsigned long long addr;

	while (*frame == ' ')
		frame++;
	if (strncmp(frame, "0x", 2))
		return false;
	addr = strtoull(frame, NULL, 16);
	return addr >= r[0] && addr < r[0] + r[1];
}

int cmd_slabsites(int argc, char **argv)
{
	unsigned long long r[2];
	long long n;

	if (argc == 3 && !strcmp(argv[1], "slabsites")) {
		n = slab_count(match_module, argv[2], !!getenv("SHOW"));
	} else if (argc == 4 && !strcmp(argv[1], "slabrange")) {
		r[0] = strtoull(argv[2], NULL, 16);
		r[1] = strtoull(argv[3], NULL, 16);
		n = slab_count(match_range, r, true);
	} else {
		return 2;
	}
	printf("%lld\n", n);
	return n < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(void);
	} suites[] = {
		{ "functional", suite_functional },
		{ "host", suite_host },
		{ "nvp2p", suite_nvp2p },
		{ "faults", suite_faults },
		{ "badioctl", suite_badioctl },
		{ "removal", suite_removal },
		{ "stress", suite_stress },
		{ "frames", suite_frames },
		{ "dmabuf", suite_dmabuf },
		{ "recovery", suite_recovery },
		{ "pinhold", cmd_pinhold },
		{ "hang", cmd_hang },
	};
	size_t i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (getenv("FPGAGDR_DEVICE"))
		t_dev = getenv("FPGAGDR_DEVICE");
	if (argc >= 2 && !strncmp(argv[1], "slab", 4))
		return cmd_slabsites(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "badcard"))
		return cmd_badcard(argc, argv);
	for (i = 0; argc == 2 && i < ARRAY_SIZE(suites); i++)
		if (!strcmp(argv[1], suites[i].name))
			return suites[i].fn();
	fprintf(stderr, "usage: fgtest SUITE|pinhold|slabsites MOD|slabrange START LEN\n"
		"  SUITE: functional, host, nvp2p, faults, badioctl, removal, stress, frames,\n"
		"         dmabuf, recovery\n"
		"  badcard STATE: the card breaks a frame protocol rule\n");
	return 2;
}
