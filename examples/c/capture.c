/*
 * capture.c: the smallest fpgagdr capture program in C.
 *
 * Opens a card, pins a ring of frame buffers once, waits for frames, reads each
 * into the next ring entry by DMA, and prints a checksum of its bytes.
 *
 *   cc capture.c $(pkg-config --cflags --libs fpgagdr) -o capture
 *   ./capture sim 8             # the simulated card (no FPGA needed), 8 frames
 *   ./capture /dev/fpgagdr0 8   # the kernel module's card
 *   ./capture                   # $FPGAGDR_DEVICE if set, else "sim"; 8 frames
 *
 * The ring is host memory here so the CPU can checksum it; on a GPU machine it would
 * be cudaMalloc (FPGAGDR_MEMORY_CUDA_DEVICE) or cudaHostAlloc on Jetson
 * (FPGAGDR_MEMORY_CUDA_HOST), pinned the same way.
 */
#include <fpgagdr.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RING_ENTRIES 4
#define TIMEOUT_NS (1000ull * 1000 * 1000) /* 1 s */

static int fail(const char *what, int rc)
{
	char msg[512];

	fpgagdr_last_error(msg, sizeof(msg));
	fprintf(stderr, "capture: %s failed: %s (%d): %s\n", what, strerror(-rc), rc, msg);
	return 1;
}

/* FNV-1a, 64 bit: a checksum any other program can recompute. */
static uint64_t fnv1a(const uint8_t *p, uint64_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (n--) {
		h ^= *p++;
		h *= 0x100000001b3ull;
	}
	return h;
}

int main(int argc, char **argv)
{
	const char *dev = getenv("FPGAGDR_DEVICE");
	const char *path = argc > 1 ? argv[1] : dev ? dev : "sim";
	int frames = argc > 2 ? atoi(argv[2]) : 8;
	struct fpgagdr_card *card;
	struct fpgagdr_card_status st = { .struct_size_bytes = sizeof(st) };
	struct fpgagdr_buffer ring[RING_ENTRIES];
	uint8_t *mem[RING_ENTRIES];
	uint64_t entry_bytes, max_frame;
	int rc, i, status = 0;

	rc = fpgagdr_open(path, 0, &card);
	if (rc)
		return fail("fpgagdr_open", rc);
	rc = fpgagdr_get_status(card, &st);
	if (rc)
		return fail("fpgagdr_get_status", rc);
	printf("card: %s (alignment %" PRIu64 " bytes)\n", st.name, st.alignment_bytes);
	rc = fpgagdr_get_max_frame_bytes(card, &max_frame);
	if (rc)
		return fail("fpgagdr_get_max_frame_bytes", rc);
	/* One ring entry holds the largest frame, rounded up to the pin alignment. */
	entry_bytes = (max_frame + st.alignment_bytes - 1) / st.alignment_bytes * st.alignment_bytes;

	for (i = 0; i < RING_ENTRIES; i++) {
		struct fpgagdr_memory m = { .struct_size_bytes = sizeof(m) };

		if (posix_memalign((void **)&mem[i], st.alignment_bytes, entry_bytes))
			return 1;
		m.kind = FPGAGDR_MEMORY_HOST;
		m.addr = (uintptr_t)mem[i];
		m.length_bytes = entry_bytes;
		rc = fpgagdr_pin_buffer(card, &m, 0, &ring[i]); /* pin once */
		if (rc)
			return fail("fpgagdr_pin_buffer", rc);
	}

	for (i = 0; i < frames; i++) {
		struct fpgagdr_frame f = { .struct_size_bytes = sizeof(f) };
		struct fpgagdr_transfer_result t = { .struct_size_bytes = sizeof(t) };
		int k = i % RING_ENTRIES;

		rc = fpgagdr_wait_frame(card, TIMEOUT_NS, 0, &f);
		if (rc) {
			status = fail("fpgagdr_wait_frame", rc);
			break;
		}
		rc = fpgagdr_read_c2h(card, 0, ring[k], 0, f.card_addr, f.length_bytes,
				      TIMEOUT_NS, 0, &t);
		if (rc) {
			status = fail("fpgagdr_read_c2h", rc);
			break;
		}
		printf("frame %" PRIu64 ": %" PRIu64 " bytes into entry %d in %" PRIu64
		       " ns, fnv1a %016" PRIx64 "\n",
		       f.sequence, t.bytes, k, t.elapsed_ns, fnv1a(mem[k], t.bytes));
	}

	for (i = 0; i < RING_ENTRIES; i++) {
		rc = fpgagdr_unpin_buffer(card, ring[i]); /* unpin, then free */
		if (rc)
			status = fail("fpgagdr_unpin_buffer", rc);
		free(mem[i]);
	}
	rc = fpgagdr_close(card);
	if (rc)
		status = fail("fpgagdr_close", rc);
	return status;
}
