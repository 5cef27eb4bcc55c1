// SPDX-License-Identifier: GPL-2.0
/*
 * fpgagdr-dmasync.c, the per-run cache maintenance of a pin's mapping,
 * against two models of the DMA API's mapping of a scatterlist: dma-direct
 * (each CPU-side entry one DMA segment, at its physical address) and an
 * IOMMU that concatenates entries into one IOVA-contiguous DMA segment
 * (iommu-dma on arm64, which every Jetson's SMMU uses).  The sync calls
 * are modelled as the kernel makes them: the DMA address (plus offset) is
 * translated once, and the size is maintained as physically contiguous
 * memory from there (iommu_dma_sync_single_for_cpu() and friends).  Every
 * byte of the run's range must be maintained exactly once, in its own
 * physical page, and nothing else.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "linux/scatterlist.h"
#include "../fpgagdr-dmasync.h"

int test_failures;
int test_checks;

#define PHYS_SPACE	0x100000
#define IOVA_BASE	0x80000000ULL
#define MAX_ENTS	16

/* What each physical byte saw: syncs for the device, for the CPU. */
static unsigned char seen_dev[PHYS_SPACE], seen_cpu[PHYS_SPACE];
static enum dma_data_direction seen_dir;
static unsigned int calls, bad_dir, outside;

static struct scatterlist sgl[MAX_ENTS];
static struct sg_table sgt = { .sgl = sgl };
static bool iommu;

/* The model's IOMMU: the physical address behind an IOVA. */
static u64 iova_to_phys(u64 iova)
{
	u64 pos = IOVA_BASE;
	unsigned int i;

	for (i = 0; i < sgt.orig_nents; i++) {
		if (iova >= pos && iova < pos + sgl[i].length)
			return sgl[i].phys + (iova - pos);
		pos += sgl[i].length;
	}
	outside++;
	return 0;
}

static void record(unsigned char *seen, dma_addr_t addr, unsigned long off,
		   size_t size, enum dma_data_direction dir)
{
	u64 phys = iommu ? iova_to_phys(addr + off) : addr + off;
	size_t i;

	calls++;
	if (dir != seen_dir)
		bad_dir++;
	if (phys + size > PHYS_SPACE) {
		outside++;
		return;
	}
	for (i = 0; i < size; i++)
		seen[phys + i]++;
}

void dma_sync_single_range_for_cpu(struct device *dev, dma_addr_t addr,
				   unsigned long offset, size_t size,
				   enum dma_data_direction dir)
{
	record(seen_cpu, addr, offset, size, dir);
}

void dma_sync_single_range_for_device(struct device *dev, dma_addr_t addr,
				      unsigned long offset, size_t size,
				      enum dma_data_direction dir)
{
	record(seen_dev, addr, offset, size, dir);
}

/*
 * A table of CPU-side entries (physical address, bytes), mapped: by
 * dma-direct, or by the IOMMU into DMA segments of at most @max_seg bytes.
 */
static void map(const u64 *phys, const unsigned int *len, unsigned int n,
		bool use_iommu, u64 max_seg)
{
	unsigned int i, seg = 0;
	u64 iova = IOVA_BASE;

	memset(sgl, 0, sizeof(sgl));
	iommu = use_iommu;
	for (i = 0; i < n; i++) {
		sgl[i].phys = phys[i];
		sgl[i].length = len[i];
	}
	sgt.orig_nents = n;
	if (!use_iommu) {
		for (i = 0; i < n; i++) {
			sgl[i].dma_address = phys[i];
			sgl[i].dma_length = len[i];
		}
		sgt.nents = n;
		return;
	}
	/* concatenate whole entries into segments, as __finalise_sg() */
	for (i = 0; i < n; i++) {
		if (i && sgl[seg].dma_length + len[i] <= max_seg) {
			sgl[seg].dma_length += len[i];
		} else {
			if (i)
				seg++;
			sgl[seg].dma_address = iova;
			sgl[seg].dma_length = len[i];
		}
		iova += len[i];
	}
	sgt.nents = seg + 1;
}

/* Sync [start, start + len) both ways; check every byte's maintenance. */
static void check_range(u64 start, u64 len, enum dma_data_direction dir)
{
	unsigned int i, wrong = 0;
	u64 pos = 0, b, p;

	memset(seen_dev, 0, sizeof(seen_dev));
	memset(seen_cpu, 0, sizeof(seen_cpu));
	calls = 0;
	bad_dir = 0;
	outside = 0;
	seen_dir = dir;
	fpgagdr_dma_sync_range(NULL, &sgt, start, len, dir, true);
	fpgagdr_dma_sync_range(NULL, &sgt, start, len, dir, false);
	CHECK_EQ(bad_dir, 0);
	CHECK_EQ(outside, 0);
	/* the bytes of the range, in their own pages, once each way */
	for (i = 0; i < sgt.orig_nents; i++) {
		for (b = 0; b < sgl[i].length; b++) {
			p = sgl[i].phys + b;
			if (pos + b >= start && pos + b < start + len) {
				wrong += seen_dev[p] != 1 || seen_cpu[p] != 1;
				seen_dev[p] = 0;
				seen_cpu[p] = 0;
			}
		}
		pos += sgl[i].length;
	}
	/* and nothing else */
	for (p = 0; p < PHYS_SPACE; p++)
		wrong += seen_dev[p] || seen_cpu[p];
	CHECK_EQ(wrong, 0);
}

/* Three scattered pages and a physically contiguous run of two. */
static const u64 phys4[] = { 0x10000, 0x30000, 0x21000, 0x50000 };
static const unsigned int len4[] = { 4096, 4096, 4096, 8192 };

static void test_unmerged_table(void)
{
	map(phys4, len4, 4, false, 0);
	CHECK_EQ(sgt.nents, 4);
	check_range(0, 20480, DMA_FROM_DEVICE);
	check_range(100, 10000, DMA_TO_DEVICE);
	check_range(4096, 4096, DMA_FROM_DEVICE);
	check_range(12287, 2, DMA_FROM_DEVICE);
	check_range(20479, 1, DMA_TO_DEVICE);
}

/*
 * The IOMMU made one DMA segment of the four entries: a range spanning
 * them is one IOVA range but four physical ones.
 */
static void test_merged_table(void)
{
	map(phys4, len4, 4, true, 1u << 20);
	CHECK_EQ(sgt.nents, 1);
	check_range(0, 20480, DMA_FROM_DEVICE);
	check_range(100, 10000, DMA_FROM_DEVICE);
	check_range(4000, 200, DMA_TO_DEVICE);
	check_range(12288, 8192, DMA_FROM_DEVICE);
	check_range(5000, 1, DMA_FROM_DEVICE);
}

/* Merged into two segments (the device's maximum segment: 8 KiB). */
static void test_partly_merged_table(void)
{
	map(phys4, len4, 4, true, 8192);
	CHECK_EQ(sgt.nents, 3);
	check_range(0, 20480, DMA_TO_DEVICE);
	check_range(8191, 2, DMA_FROM_DEVICE);
	check_range(6000, 9000, DMA_FROM_DEVICE);
}

/* Every sub-range of a merged and an unmerged table, on a coarse grid. */
static void test_ranges_on_a_grid(void)
{
	static const u64 phys[] = { 0x40000, 0x08000, 0x70000, 0x71000,
				    0x20000, 0x66000 };
	static const unsigned int len[] = { 4096, 4096, 4096, 4096, 12288,
					    4096 };
	u64 total = 32768, s, l;
	int m;

	for (m = 0; m < 2; m++) {
		map(phys, len, 6, m, 1u << 20);
		for (s = 0; s < total; s += 1536)
			for (l = 1; s + l <= total; l += 2560)
				check_range(s, l, DMA_FROM_DEVICE);
	}
}

int main(void)
{
	RUN(test_unmerged_table);
	RUN(test_merged_table);
	RUN(test_partly_merged_table);
	RUN(test_ranges_on_a_grid);
	return test_summary();
}
