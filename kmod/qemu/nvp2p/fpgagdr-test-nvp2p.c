// SPDX-License-Identifier: GPL-2.0
/*
 * TEST DOUBLE of NVIDIA's nvidia_p2p kernel API, for QEMU guests
 * that have no NVIDIA GPU.  It exports the nvidia_p2p_* symbols that
 * fpgagdr's nvidia_p2p back-end (built with FPGAGDR_NVP2P=compat) uses,
 * and behaves as fpgagdr-nv-p2p-compat.h says NVIDIA's current driver does
 * (open kernel modules, kernel-open/nvidia/nv-p2p.c).  Never load it where
 * nvidia.ko is.
 *
 * "GPU memory" is an address space of its own, in which user space makes
 * allocations (as cudaMalloc() does); only addresses inside an allocation
 * are GPU memory, and nvidia_p2p_get_pages*() refuses any other address
 * with -EINVAL, as NVIDIA's driver does (host memory on the GPU path is
 * such an address).  An allocation is backed, on first use of each 64 KiB,
 * by a GPU page: 64 KiB of physically contiguous, zeroed kernel pages.
 * The addresses need not be mapped in any process (like cudaMalloc()
 * memory, which the CPU does not touch either).  Through debugfs,
 * fpgagdr-test-nvp2p/:
 *   alloc    write "ADDR LEN": cudaMalloc() at GPU address ADDR (64 KiB
 *            aligned); an overlapping allocation is refused (-EEXIST)
 *   mem      pread()/pwrite() at file offset = GPU address, inside an
 *            allocation: what cudaMemcpy() would do
 *   free     write "ADDR LEN" of an allocation: cudaFree().  Every callback
 *            page table overlapping it gets its free callback, called with
 *            the double's "API lock" held (as NVIDIA holds its RM API lock);
 *            after the callback the double unmaps the table's remaining
 *            mappings and frees the table, as NVIDIA does.  Then the
 *            allocation's GPU pages are dropped (pinned ones live on until
 *            their page table is released).  A GPU page that is dropped
 *            is filled with poison and kept in a quarantine of
 *            TNV_QUARANTINE pages: a DMA into freed GPU memory damages the
 *            poison and is reported as misuse when the stats are read
 *   persistent_error  N: the next nvidia_p2p_get_pages_persistent() fails
 *            with -N (an error other than "not supported": no fallback)
 *   revoke_in_get  N: the next N nvidia_p2p_get_pages() calls fire the
 *            table's callback (and free it) before they return: a cudaFree
 *            racing the pin
 *   revoke_in_map  N: the same in the next N nvidia_p2p_dma_map_pages(),
 *            after the mapping is made
 *   revoke_in_unmap  N: the next N nvidia_p2p_dma_unmap_pages() of a
 *            callback table first start its callback on another thread
 *            and give it up to 200 ms: a cudaFree racing an unpin, in the
 *            order that lets the driver free the table under the unmap
 *   stats    live page tables, mappings, GPU pages, callbacks, tables the
 *            driver freed after a callback, calls of the callback form of
 *            get_pages, allocations, freed GPU pages found written, misuse
 * Module parameter persistent (0644, default 1):
 * nvidia_p2p_get_pages_persistent() works; 0 makes it fail -ENOTSUPP, as
 * on a MIG-enabled GPU or vGPU.
 *
 * What it enforces (misuse is a WARN, which fails a QEMU run): every call
 * names a table or mapping that exists; a persistent table is released by
 * nvidia_p2p_put_pages_persistent(), a callback table by
 * nvidia_p2p_put_pages() or by its callback; unmapping with the peer it
 * was mapped for.  A table the driver freed after its callback stays known
 * (as NVIDIA's put_pages answers it with success): put_pages() of it
 * returns 0; dma_map_pages() or dma_unmap_pages() on it, a use after free
 * on the real driver, is misuse.
 */
#include <linux/completion.h>
#include <linux/debugfs.h>
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/kref.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/seq_file.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "fpgagdr-nv-p2p-compat.h"

#define TNV_PAGE	SZ_64K
#define TNV_ORDER	(16 - PAGE_SHIFT)
/* freed GPU pages kept poisoned, to catch DMA into freed GPU memory */
#define TNV_QUARANTINE	64
#define TNV_POISON	0xd7

static int tnv_persistent = 1;
module_param_named(persistent, tnv_persistent, int, 0644);
MODULE_PARM_DESC(persistent, "TEST DOUBLE: nvidia_p2p_get_pages_persistent() works (0: -ENOTSUPP, as with MIG or vGPU), default 1");

/**
 * struct tnv_chunk - one 64 KiB GPU page
 * @ref: one reference from the address space while not freed, one per
 *	page table holding it
 * @page: 64 KiB of contiguous pages
 * @va: its GPU address
 * @node: in tnv_quarantine once freed
 */
struct tnv_chunk {
	struct kref ref;
	struct page *page;
	u64 va;
	struct list_head node;
};

/**
 * struct tnv_alloc - one cudaMalloc()
 * @va: GPU address
 * @len: bytes
 * @node: in tnv_allocs
 */
struct tnv_alloc {
	u64 va;
	u64 len;
	struct list_head node;
};

/* callback tables: LIVE -> REVOKED (callback running) -> DEAD (freed) */
enum { TNV_LIVE, TNV_REVOKED, TNV_DEAD };

/**
 * struct tnv_table - a page table handed out
 * @pt: what the client sees
 * @node: in tnv_tables
 * @maps: its struct tnv_map, under tnv_lock
 * @va: GPU address of the first page
 * @state: TNV_LIVE, TNV_REVOKED or TNV_DEAD, under tnv_lock; a DEAD table
 *	keeps only this struct, for put_pages to find
 * @cb: free callback, NULL for persistent pages
 * @data: its argument
 * @chunks: the GPU pages, referenced
 * @page: the entries @pt.pages points to
 */
struct tnv_table {
	struct nvidia_p2p_page_table pt;
	struct list_head node;
	struct list_head maps;
	u64 va;
	int state;
	void (*cb)(void *data);
	void *data;
	struct tnv_chunk **chunks;
	struct nvidia_p2p_page *page;
};

/**
 * struct tnv_map - a DMA mapping handed out
 * @m: what the client sees
 * @node: in its table's @maps
 * @table: the table
 */
struct tnv_map {
	struct nvidia_p2p_dma_mapping m;
	struct list_head node;
	struct tnv_table *table;
};

/* GPU address >> 16 -> struct tnv_chunk; the xa_lock guards lookups */
static DEFINE_XARRAY(tnv_mem);
/* protects tnv_tables, every table's state and maps */
static DEFINE_SPINLOCK(tnv_lock);
static LIST_HEAD(tnv_tables);
/* the allocations, under tnv_lock */
static LIST_HEAD(tnv_allocs);
/* freed GPU pages, poisoned, oldest first; under tnv_quarantine_lock */
static DEFINE_SPINLOCK(tnv_quarantine_lock);
static LIST_HEAD(tnv_quarantine);
static unsigned int tnv_nquarantine;
static u32 tnv_persistent_error;
/*
 * "The RM API lock": held across free callbacks (and the frees after
 * them), and taken by put_pages and dma_map_pages, as NVIDIA's are
 */
static DEFINE_MUTEX(tnv_cb_lock);
static atomic_t tnv_revoke_in_get, tnv_revoke_in_map, tnv_revoke_in_unmap;
static atomic64_t tnv_ntables, tnv_nmaps, tnv_nchunks, tnv_callbacks,
	tnv_ndead, tnv_nmisuse, tnv_nget_cb, tnv_nallocs, tnv_nfreed_written;
static struct workqueue_struct *tnv_wq;
static struct dentry *tnv_dbg;
static const u8 tnv_uuid[16] = "fpgagdr-testgpu";

#define tnv_misuse(fmt, ...) do {					\
	atomic64_inc(&tnv_nmisuse);					\
	WARN(1, "fpgagdr-test-nvp2p: misuse: " fmt, ##__VA_ARGS__);	\
} while (0)

/* A freed GPU page whose poison changed: something wrote freed memory. */
static bool tnv_poison_ok(struct tnv_chunk *c)
{
	const u8 *p = page_address(c->page);
	size_t i;

	for (i = 0; i < TNV_PAGE; i++)
		if (p[i] != TNV_POISON)
			return false;
	return true;
}

static void tnv_chunk_free(struct tnv_chunk *c)
{
	if (!tnv_poison_ok(c)) {
		atomic64_inc(&tnv_nfreed_written);
		tnv_misuse("GPU page at %#llx written after its cudaFree\n",
			   c->va);
	}
	__free_pages(c->page, TNV_ORDER);
	kfree(c);
}

/* Check every quarantined page; with @drain, free them all. */
static void tnv_quarantine_check(bool drain)
{
	struct tnv_chunk *c, *tmp;
	LIST_HEAD(out);

	spin_lock(&tnv_quarantine_lock);
	list_for_each_entry_safe(c, tmp, &tnv_quarantine, node) {
		if (!drain && tnv_poison_ok(c))
			continue;
		list_move_tail(&c->node, &out);
		tnv_nquarantine--;
	}
	spin_unlock(&tnv_quarantine_lock);
	list_for_each_entry_safe(c, tmp, &out, node)
		tnv_chunk_free(c);
}

static void tnv_chunk_release(struct kref *ref)
{
	struct tnv_chunk *c = container_of(ref, struct tnv_chunk, ref);
	struct tnv_chunk *old = NULL;

	memset(page_address(c->page), TNV_POISON, TNV_PAGE);
	atomic64_dec(&tnv_nchunks);
	spin_lock(&tnv_quarantine_lock);
	list_add_tail(&c->node, &tnv_quarantine);
	if (++tnv_nquarantine > TNV_QUARANTINE) {
		old = list_first_entry(&tnv_quarantine, struct tnv_chunk, node);
		list_del(&old->node);
		tnv_nquarantine--;
	}
	spin_unlock(&tnv_quarantine_lock);
	if (old)
		tnv_chunk_free(old);
}

/* Is [@va, @va + @len) inside one allocation? */
static bool tnv_allocated(u64 va, u64 len)
{
	struct tnv_alloc *a;
	bool ok = false;

	spin_lock(&tnv_lock);
	list_for_each_entry(a, &tnv_allocs, node)
		if (va >= a->va && len <= a->len && va - a->va <= a->len - len)
			ok = true;
	spin_unlock(&tnv_lock);
	return ok;
}

/* The GPU page at @va with a reference for the caller; NULL if none. */
static struct tnv_chunk *tnv_chunk_get(u64 va, bool create)
{
	unsigned long idx = va >> 16;
	struct tnv_chunk *c, *old;

	xa_lock(&tnv_mem);
	c = xa_load(&tnv_mem, idx);
	if (c)
		kref_get(&c->ref);
	xa_unlock(&tnv_mem);
	if (c || !create)
		return c;
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return NULL;
	c->page = alloc_pages(GFP_KERNEL | __GFP_ZERO | __GFP_COMP, TNV_ORDER);
	if (!c->page) {
		kfree(c);
		return NULL;
	}
	c->va = round_down(va, TNV_PAGE);
	kref_init(&c->ref);		/* the address space's */
	kref_get(&c->ref);		/* the caller's */
	xa_lock(&tnv_mem);
	old = __xa_cmpxchg(&tnv_mem, idx, NULL, c, GFP_ATOMIC);
	if (old && !xa_is_err(old))
		kref_get(&old->ref);
	xa_unlock(&tnv_mem);
	if (old) {
		__free_pages(c->page, TNV_ORDER);
		kfree(c);
		return xa_is_err(old) ? NULL : old;
	}
	atomic64_inc(&tnv_nchunks);
	return c;
}

static void tnv_chunk_put(struct tnv_chunk *c)
{
	kref_put(&c->ref, tnv_chunk_release);
}

/* Validate a client's pointer without dereferencing it. */
static struct tnv_table *tnv_find_table(struct nvidia_p2p_page_table *pt)
{
	struct tnv_table *t;

	lockdep_assert_held(&tnv_lock);
	list_for_each_entry(t, &tnv_tables, node)
		if (&t->pt == pt)
			return t;
	return NULL;
}

static struct tnv_map *tnv_find_map(struct nvidia_p2p_dma_mapping *m)
{
	struct tnv_table *t;
	struct tnv_map *map;

	lockdep_assert_held(&tnv_lock);
	list_for_each_entry(t, &tnv_tables, node)
		list_for_each_entry(map, &t->maps, node)
			if (&map->m == m)
				return map;
	return NULL;
}

static void tnv_map_free(struct tnv_map *map)
{
	struct device *dev = &map->m.pci_dev->dev;
	u32 i;

	for (i = 0; i < map->m.entries; i++)
		dma_unmap_page(dev, map->m.dma_addresses[i], TNV_PAGE,
			       DMA_BIDIRECTIONAL);
	kfree(map->m.dma_addresses);
	kfree(map);
	atomic64_dec(&tnv_nmaps);
}

/*
 * Release what a table holds (its maps, GPU pages and arrays), leaving the
 * struct; @maps must no longer be reachable by the client's calls.
 */
static void tnv_table_strip(struct tnv_table *t, struct list_head *maps)
{
	struct tnv_map *map, *tmp;
	u32 i;

	list_for_each_entry_safe(map, tmp, maps, node) {
		list_del(&map->node);
		tnv_map_free(map);
	}
	for (i = 0; i < t->pt.entries; i++)
		if (t->chunks && t->chunks[i])
			tnv_chunk_put(t->chunks[i]);
	kfree(t->chunks);
	kfree(t->page);
	kfree(t->pt.pages);
	kfree(t->pt.gpu_uuid);
	t->chunks = NULL;
	t->page = NULL;
	/* what a client reading freed memory would most likely find */
	memset(&t->pt, 0x6b, sizeof(t->pt));
	atomic64_dec(&tnv_ntables);
}

/* Free a table unlinked from tnv_tables, with whatever it still holds. */
static void tnv_table_free(struct tnv_table *t)
{
	if (t->state != TNV_DEAD)
		tnv_table_strip(t, &t->maps);
	else
		atomic64_dec(&tnv_ndead);
	kfree(t);
}

static struct tnv_table *tnv_table_alloc(u64 va, u32 n)
{
	struct tnv_table *t = kzalloc(sizeof(*t), GFP_KERNEL);
	u32 i;

	if (!t)
		return NULL;
	INIT_LIST_HEAD(&t->maps);
	t->va = va;
	t->chunks = kcalloc(n, sizeof(*t->chunks), GFP_KERNEL);
	t->page = kcalloc(n, sizeof(*t->page), GFP_KERNEL);
	t->pt.pages = kcalloc(n, sizeof(*t->pt.pages), GFP_KERNEL);
	t->pt.gpu_uuid = kmemdup(tnv_uuid, sizeof(tnv_uuid), GFP_KERNEL);
	atomic64_inc(&tnv_ntables);
	t->pt.entries = n;
	if (!t->chunks || !t->page || !t->pt.pages || !t->pt.gpu_uuid)
		goto free;
	for (i = 0; i < n; i++) {
		t->chunks[i] = tnv_chunk_get(va + (u64)i * TNV_PAGE, true);
		if (!t->chunks[i])
			goto free;
		t->page[i].physical_address = page_to_phys(t->chunks[i]->page);
		t->pt.pages[i] = &t->page[i];
	}
	t->pt.version = NVIDIA_P2P_PAGE_TABLE_VERSION;
	t->pt.page_size = NVIDIA_P2P_PAGE_SIZE_64KB;
	return t;

free:
	if (!t->chunks)
		t->pt.entries = 0;
	tnv_table_free(t);
	return NULL;
}

/* Fire @t's callback, then free the table as NVIDIA does; tnv_cb_lock held. */
static void tnv_revoke(struct tnv_table *t)
{
	void (*cb)(void *data) = NULL;
	void *data = NULL;
	LIST_HEAD(maps);

	lockdep_assert_held(&tnv_cb_lock);
	spin_lock(&tnv_lock);
	if (tnv_find_table(&t->pt) == t && t->state == TNV_LIVE && t->cb) {
		t->state = TNV_REVOKED;
		cb = t->cb;
		data = t->data;
	}
	spin_unlock(&tnv_lock);
	if (!cb)
		return;
	atomic64_inc(&tnv_callbacks);
	cb(data);
	/* the callback has returned: unmap what is left, free the table */
	spin_lock(&tnv_lock);
	list_splice_init(&t->maps, &maps);
	t->state = TNV_DEAD;
	spin_unlock(&tnv_lock);
	tnv_table_strip(t, &maps);
	atomic64_inc(&tnv_ndead);
}

static void tnv_revoke_locked(struct tnv_table *t)
{
	mutex_lock(&tnv_cb_lock);
	tnv_revoke(t);
	mutex_unlock(&tnv_cb_lock);
}

static int tnv_get(u64 va, u64 length, struct nvidia_p2p_page_table **pt,
		   void (*cb)(void *data), void *data)
{
	struct tnv_table *t;

	if (!pt || !length || !IS_ALIGNED(va, TNV_PAGE) ||
	    !IS_ALIGNED(length, TNV_PAGE) || length / TNV_PAGE > U32_MAX)
		return -EINVAL;
	/* NVIDIA's answer to an address that is not a CUDA allocation */
	if (!tnv_allocated(va, length))
		return -EINVAL;
	t = tnv_table_alloc(va, length / TNV_PAGE);
	if (!t)
		return -ENOMEM;
	t->cb = cb;
	t->data = data;
	spin_lock(&tnv_lock);
	list_add_tail(&t->node, &tnv_tables);
	spin_unlock(&tnv_lock);
	*pt = &t->pt;
	return 0;
}

int nvidia_p2p_get_pages(u64 p2p_token, u32 va_space, u64 virtual_address,
			 u64 length, struct nvidia_p2p_page_table **page_table,
			 void (*free_callback)(void *data), void *data)
{
	struct tnv_table *t;
	int ret;

	/* since CUDA 12.2 a NULL callback is refused, not persistent */
	if (p2p_token || va_space || !free_callback || !data)
		return -EINVAL;
	atomic64_inc(&tnv_nget_cb);
	ret = tnv_get(virtual_address, length, page_table, free_callback, data);
	if (ret)
		return ret;
	if (atomic_add_unless(&tnv_revoke_in_get, -1, 0)) {
		/* the callback is registered: a cudaFree may come first */
		t = container_of(*page_table, struct tnv_table, pt);
		tnv_revoke_locked(t);
	}
	return 0;
}
EXPORT_SYMBOL(nvidia_p2p_get_pages);

int nvidia_p2p_get_pages_persistent(u64 virtual_address, u64 length,
				    struct nvidia_p2p_page_table **page_table,
				    u32 flags)
{
	if (flags & NVIDIA_P2P_FLAGS_FORCE_BAR1_MAPPING)
		return -ENOTSUPP;
	if (flags)
		return -EINVAL;
	if (!READ_ONCE(tnv_persistent))
		return -ENOTSUPP;	/* MIG, vGPU */
	if (READ_ONCE(tnv_persistent_error))
		return -(int)xchg(&tnv_persistent_error, 0);
	return tnv_get(virtual_address, length, page_table, NULL, NULL);
}
EXPORT_SYMBOL(nvidia_p2p_get_pages_persistent);

/* Unlink the table a client releases; NULL (and a WARN) if it may not. */
static struct tnv_table *tnv_take_table(struct nvidia_p2p_page_table *pt,
					u64 va, bool persistent)
{
	struct tnv_table *t;
	int bad = 0;

	spin_lock(&tnv_lock);
	t = tnv_find_table(pt);
	if (!t)
		bad = 1;
	else if (t->va != va)
		bad = 2;
	else if (persistent != !t->cb)
		bad = 3;
	else
		list_del(&t->node);
	spin_unlock(&tnv_lock);
	if (bad)
		tnv_misuse("%s of %s\n",
			   persistent ? "put_pages_persistent" : "put_pages",
			   bad == 1 ? "an unknown or released page table" :
			   bad == 2 ? "a table at another address" :
			   persistent ? "a callback table" :
			   "a persistent table");
	return bad ? NULL : t;
}

int nvidia_p2p_put_pages(u64 p2p_token, u32 va_space, u64 virtual_address,
			 struct nvidia_p2p_page_table *page_table)
{
	struct tnv_table *t;

	/* waits for a free callback in flight, as NVIDIA's does */
	mutex_lock(&tnv_cb_lock);
	t = tnv_take_table(page_table, virtual_address, false);
	mutex_unlock(&tnv_cb_lock);
	if (!t)
		return -EINVAL;
	/* a table the callback took: NVIDIA answers 0, touching nothing */
	tnv_table_free(t);
	return 0;
}
EXPORT_SYMBOL(nvidia_p2p_put_pages);

int nvidia_p2p_put_pages_persistent(u64 virtual_address,
				    struct nvidia_p2p_page_table *page_table,
				    u32 flags)
{
	struct tnv_table *t;

	if (flags)
		return -EINVAL;
	t = tnv_take_table(page_table, virtual_address, true);
	if (!t)
		return -EINVAL;
	tnv_table_free(t);
	return 0;
}
EXPORT_SYMBOL(nvidia_p2p_put_pages_persistent);

static int tnv_map_pages(struct pci_dev *peer, struct tnv_table *t,
			 struct tnv_map *map)
{
	u32 i;

	map->m.dma_addresses = kcalloc(t->pt.entries, sizeof(u64), GFP_KERNEL);
	if (!map->m.dma_addresses)
		return -ENOMEM;
	for (i = 0; i < t->pt.entries; i++) {
		dma_addr_t a = dma_map_page(&peer->dev, t->chunks[i]->page, 0,
					    TNV_PAGE, DMA_BIDIRECTIONAL);

		if (dma_mapping_error(&peer->dev, a)) {
			map->m.entries = i;
			return -EIO;
		}
		map->m.dma_addresses[i] = a;
	}
	map->m.entries = t->pt.entries;
	return 0;
}

int nvidia_p2p_dma_map_pages(struct pci_dev *peer,
			     struct nvidia_p2p_page_table *page_table,
			     struct nvidia_p2p_dma_mapping **dma_mapping)
{
	struct tnv_map *map;
	struct tnv_table *t;
	int ret, state = 0;

	if (!peer || !page_table || !dma_mapping)
		return -EINVAL;
	/* NVIDIA maps under its API lock: after a callback in flight */
	mutex_lock(&tnv_cb_lock);
	spin_lock(&tnv_lock);
	t = tnv_find_table(page_table);
	if (t)
		state = t->state;
	spin_unlock(&tnv_lock);
	if (!t || state != TNV_LIVE) {
		mutex_unlock(&tnv_cb_lock);
		tnv_misuse("dma_map_pages of %s\n", !t ?
			   "an unknown or released table" :
			   "a table its callback took (use after free)");
		return -EINVAL;
	}
	map = kzalloc(sizeof(*map), GFP_KERNEL);
	if (!map) {
		mutex_unlock(&tnv_cb_lock);
		return -ENOMEM;
	}
	map->table = t;
	map->m.version = NVIDIA_P2P_DMA_MAPPING_VERSION;
	map->m.page_size_type = NVIDIA_P2P_PAGE_SIZE_64KB;
	map->m.pci_dev = peer;
	atomic64_inc(&tnv_nmaps);
	ret = tnv_map_pages(peer, t, map);
	if (ret) {
		mutex_unlock(&tnv_cb_lock);
		tnv_map_free(map);
		return ret;
	}
	spin_lock(&tnv_lock);
	list_add_tail(&map->node, &t->maps);
	spin_unlock(&tnv_lock);
	mutex_unlock(&tnv_cb_lock);
	*dma_mapping = &map->m;
	if (t->cb && atomic_add_unless(&tnv_revoke_in_map, -1, 0))
		tnv_revoke_locked(t);
	return 0;
}
EXPORT_SYMBOL(nvidia_p2p_dma_map_pages);

/* Unlink a mapping the client names; NULL (and a WARN) if it may not. */
static struct tnv_map *tnv_take_map(struct nvidia_p2p_dma_mapping *m,
				    struct nvidia_p2p_page_table *pt,
				    struct pci_dev *peer)
{
	struct tnv_map *map;
	struct tnv_table *t;
	int bad = 0;

	spin_lock(&tnv_lock);
	map = tnv_find_map(m);
	t = tnv_find_table(pt);
	if (!map)
		bad = t && t->state == TNV_DEAD ? 4 : 1;
	else if (&map->table->pt != pt)
		bad = 2;
	else if (map->m.pci_dev != peer)
		bad = 3;
	else
		list_del(&map->node);
	spin_unlock(&tnv_lock);
	if (bad)
		tnv_misuse("dma_unmap_pages: mapping %s\n",
			   bad == 1 ? "unknown or freed" :
			   bad == 2 ? "of another page table" :
			   bad == 3 ? "unmapped for another peer" :
			   "of a table freed after its callback (use after free)");
	return bad ? NULL : map;
}

/**
 * struct tnv_race - a free callback started from dma_unmap_pages()
 * @work: runs it
 * @ref: the work's and the waiter's
 * @t: the table
 * @done: the callback and the free after it are over
 */
struct tnv_race {
	struct work_struct work;
	struct kref ref;
	struct tnv_table *t;
	struct completion done;
};

static void tnv_race_release(struct kref *ref)
{
	kfree(container_of(ref, struct tnv_race, ref));
}

static void tnv_race_work(struct work_struct *work)
{
	struct tnv_race *r = container_of(work, struct tnv_race, work);

	tnv_revoke_locked(r->t);
	complete(&r->done);
	kref_put(&r->ref, tnv_race_release);
}

/* cudaFree on another CPU while an unpin is about to unmap @pt. */
static void tnv_race_unmap(struct nvidia_p2p_page_table *pt)
{
	struct tnv_table *t;
	struct tnv_race *r;
	bool live;

	spin_lock(&tnv_lock);
	t = tnv_find_table(pt);
	live = t && t->cb && t->state == TNV_LIVE;
	spin_unlock(&tnv_lock);
	if (!live || !atomic_add_unless(&tnv_revoke_in_unmap, -1, 0))
		return;
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return;
	INIT_WORK(&r->work, tnv_race_work);
	kref_init(&r->ref);
	kref_get(&r->ref);
	r->t = t;
	init_completion(&r->done);
	queue_work(tnv_wq, &r->work);
	/* a client that lets its callback return before the unmap loses */
	wait_for_completion_timeout(&r->done, msecs_to_jiffies(200));
	kref_put(&r->ref, tnv_race_release);
}

int nvidia_p2p_dma_unmap_pages(struct pci_dev *peer,
			       struct nvidia_p2p_page_table *page_table,
			       struct nvidia_p2p_dma_mapping *dma_mapping)
{
	struct tnv_map *map;

	if (!peer || !page_table || !dma_mapping)
		return -EINVAL;
	tnv_race_unmap(page_table);
	map = tnv_take_map(dma_mapping, page_table, peer);
	if (!map)
		return -EINVAL;
	tnv_map_free(map);
	return 0;
}
EXPORT_SYMBOL(nvidia_p2p_dma_unmap_pages);

/* No-ops, as in NVIDIA's driver since R515: it frees after the callback. */
int nvidia_p2p_free_dma_mapping(struct nvidia_p2p_dma_mapping *dma_mapping)
{
	return 0;
}
EXPORT_SYMBOL(nvidia_p2p_free_dma_mapping);

int nvidia_p2p_free_page_table(struct nvidia_p2p_page_table *page_table)
{
	return 0;
}
EXPORT_SYMBOL(nvidia_p2p_free_page_table);

/* Take the allocation [@va, @va + @len) out of the address space. */
static int tnv_unalloc(u64 va, u64 len)
{
	struct tnv_alloc *a, *hit = NULL;

	spin_lock(&tnv_lock);
	list_for_each_entry(a, &tnv_allocs, node) {
		if (a->va == va && a->len == len) {
			hit = a;
			list_del(&a->node);
			break;
		}
	}
	spin_unlock(&tnv_lock);
	if (!hit)
		return -EINVAL;
	kfree(hit);
	atomic64_dec(&tnv_nallocs);
	return 0;
}

/* cudaMalloc() at @va. */
static int tnv_alloc(u64 va, u64 len)
{
	struct tnv_alloc *a = kzalloc(sizeof(*a), GFP_KERNEL), *o;
	int ret = 0;

	if (!a)
		return -ENOMEM;
	a->va = va;
	a->len = len;
	spin_lock(&tnv_lock);
	list_for_each_entry(o, &tnv_allocs, node)
		if (o->va < va + len && va < o->va + o->len)
			ret = -EEXIST;
	if (!ret)
		list_add_tail(&a->node, &tnv_allocs);
	spin_unlock(&tnv_lock);
	if (ret)
		kfree(a);
	else
		atomic64_inc(&tnv_nallocs);
	return ret;
}

/* cudaFree(): fire callbacks of tables overlapping, drop the pages. */
static int tnv_free_range(u64 va, u64 len)
{
	struct tnv_table *t, *hit;
	struct tnv_chunk *c;
	u64 a;
	int ret;

	ret = tnv_unalloc(va, len);
	if (ret)
		return ret;
	mutex_lock(&tnv_cb_lock);
	for (;;) {
		hit = NULL;
		spin_lock(&tnv_lock);
		list_for_each_entry(t, &tnv_tables, node) {
			if (t->state == TNV_LIVE && t->cb && t->va < va + len &&
			    va < t->va + (u64)t->pt.entries * TNV_PAGE) {
				hit = t;
				break;
			}
		}
		spin_unlock(&tnv_lock);
		if (!hit)
			break;
		tnv_revoke(hit);
	}
	mutex_unlock(&tnv_cb_lock);
	for (a = round_down(va, TNV_PAGE); a < va + len; a += TNV_PAGE) {
		c = xa_erase(&tnv_mem, a >> 16);
		if (c)
			tnv_chunk_put(c);
	}
	return 0;
}

/* "ADDR LEN" in hex, 64 KiB aligned, from a debugfs write. */
static int tnv_parse_range(const char __user *ubuf, size_t count, u64 *va,
			   u64 *len)
{
	char buf[64];

	if (count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = 0;
	if (sscanf(buf, "%llx %llx", va, len) != 2 || !*len ||
	    *va + *len < *va || !IS_ALIGNED(*va, TNV_PAGE) ||
	    !IS_ALIGNED(*len, TNV_PAGE))
		return -EINVAL;
	return 0;
}

static ssize_t tnv_free_write(struct file *file, const char __user *ubuf,
			      size_t count, loff_t *ppos)
{
	u64 va, len;
	int ret;

	ret = tnv_parse_range(ubuf, count, &va, &len);
	if (!ret)
		ret = tnv_free_range(va, len);
	return ret ? ret : count;
}

static const struct file_operations tnv_free_fops = {
	.owner = THIS_MODULE,
	.write = tnv_free_write,
};

static ssize_t tnv_alloc_write(struct file *file, const char __user *ubuf,
			       size_t count, loff_t *ppos)
{
	u64 va, len;
	int ret;

	ret = tnv_parse_range(ubuf, count, &va, &len);
	if (!ret)
		ret = tnv_alloc(va, len);
	return ret ? ret : count;
}

static const struct file_operations tnv_alloc_fops = {
	.owner = THIS_MODULE,
	.write = tnv_alloc_write,
};

/* Copy between user space and GPU memory at @pos, @write: into GPU. */
static ssize_t tnv_mem_rw(char __user *ubuf, size_t count, loff_t *ppos,
			  bool write)
{
	size_t done = 0, n;
	struct tnv_chunk *c;
	u64 pos = *ppos;
	void *va;
	int ret = 0;

	if (!count)
		return 0;
	if (!tnv_allocated(round_down(pos, TNV_PAGE),
			   round_up(pos + count, TNV_PAGE) -
			   round_down(pos, TNV_PAGE)))
		return -EFAULT;	/* not GPU memory */
	while (done < count && !ret) {
		n = min_t(size_t, count - done, TNV_PAGE - pos % TNV_PAGE);
		c = tnv_chunk_get(pos, write);
		if (!c && write)
			ret = -ENOMEM;
		else if (!c)
			ret = clear_user(ubuf + done, n) ? -EFAULT : 0;
		if (c) {
			va = page_address(c->page) + pos % TNV_PAGE;
			if (write)
				ret = copy_from_user(va, ubuf + done, n) ?
				      -EFAULT : 0;
			else
				ret = copy_to_user(ubuf + done, va, n) ?
				      -EFAULT : 0;
			tnv_chunk_put(c);
		}
		if (!ret) {
			done += n;
			pos += n;
		}
	}
	*ppos = pos;
	return done ? done : ret;
}

static ssize_t tnv_mem_read(struct file *file, char __user *ubuf,
			    size_t count, loff_t *ppos)
{
	return tnv_mem_rw(ubuf, count, ppos, false);
}

static ssize_t tnv_mem_write(struct file *file, const char __user *ubuf,
			     size_t count, loff_t *ppos)
{
	return tnv_mem_rw((char __user *)ubuf, count, ppos, true);
}

static const struct file_operations tnv_mem_fops = {
	.owner = THIS_MODULE,
	.read = tnv_mem_read,
	.write = tnv_mem_write,
	.llseek = default_llseek,
};

static int tnv_stats_show(struct seq_file *m, void *unused)
{
	seq_printf(m, "tables %lld\n", atomic64_read(&tnv_ntables));
	seq_printf(m, "mappings %lld\n", atomic64_read(&tnv_nmaps));
	seq_printf(m, "gpu_pages %lld\n", atomic64_read(&tnv_nchunks));
	seq_printf(m, "callbacks %lld\n", atomic64_read(&tnv_callbacks));
	seq_printf(m, "freed_after_callback %lld\n", atomic64_read(&tnv_ndead));
	seq_printf(m, "get_pages_callback %lld\n", atomic64_read(&tnv_nget_cb));
	seq_printf(m, "allocations %lld\n", atomic64_read(&tnv_nallocs));
	tnv_quarantine_check(false);
	seq_printf(m, "freed_written %lld\n",
		   atomic64_read(&tnv_nfreed_written));
	seq_printf(m, "misuse %lld\n", atomic64_read(&tnv_nmisuse));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(tnv_stats);

static int __init tnv_init(void)
{
	tnv_wq = alloc_workqueue("fpgagdr-test-nvp2p", WQ_UNBOUND, 0);
	if (!tnv_wq)
		return -ENOMEM;
	tnv_dbg = debugfs_create_dir("fpgagdr-test-nvp2p", NULL);
	debugfs_create_file("mem", 0600, tnv_dbg, NULL, &tnv_mem_fops);
	debugfs_create_file("alloc", 0200, tnv_dbg, NULL, &tnv_alloc_fops);
	debugfs_create_file("free", 0200, tnv_dbg, NULL, &tnv_free_fops);
	debugfs_create_u32("persistent_error", 0600, tnv_dbg,
			   &tnv_persistent_error);
	debugfs_create_atomic_t("revoke_in_get", 0600, tnv_dbg,
				&tnv_revoke_in_get);
	debugfs_create_atomic_t("revoke_in_map", 0600, tnv_dbg,
				&tnv_revoke_in_map);
	debugfs_create_atomic_t("revoke_in_unmap", 0600, tnv_dbg,
				&tnv_revoke_in_unmap);
	debugfs_create_file("stats", 0444, tnv_dbg, NULL, &tnv_stats_fops);
	pr_info("fpgagdr-test-nvp2p: TEST DOUBLE of nvidia_p2p loaded (no GPU)\n");
	return 0;
}

static void __exit tnv_exit(void)
{
	struct tnv_alloc *a, *atmp;
	struct tnv_table *t, *tmp;
	struct tnv_chunk *c;
	unsigned long idx;

	debugfs_remove_recursive(tnv_dbg);
	destroy_workqueue(tnv_wq);
	/*
	 * fpgagdr is unloaded (it holds our symbols): a live table left is a
	 * leak; one freed after its callback is not (NVIDIA keeps nothing)
	 */
	list_for_each_entry_safe(t, tmp, &tnv_tables, node) {
		if (t->state != TNV_DEAD)
			tnv_misuse("page table at %#llx never released\n",
				   t->va);
		list_del(&t->node);
		tnv_table_free(t);
	}
	xa_for_each(&tnv_mem, idx, c) {
		xa_erase(&tnv_mem, idx);
		tnv_chunk_put(c);
	}
	list_for_each_entry_safe(a, atmp, &tnv_allocs, node) {
		list_del(&a->node);
		kfree(a);
	}
	tnv_quarantine_check(true);
}

module_init(tnv_init);
module_exit(tnv_exit);

MODULE_DESCRIPTION("TEST DOUBLE of the nvidia_p2p API for fpgagdr's QEMU tests");
MODULE_LICENSE("GPL");
