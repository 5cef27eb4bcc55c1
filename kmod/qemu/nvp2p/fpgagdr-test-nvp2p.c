// SPDX-License-Identifier: GPL-2.0
/*
 * TEST DOUBLE of NVIDIA's nvidia_p2p kernel API (issue 5), for QEMU guests
 * that have no NVIDIA GPU.  It exports the nvidia_p2p_* symbols that
 * fpgagdr's nvidia_p2p back-end (built with FPGAGDR_NVP2P=compat) uses,
 * with the contract of fpgagdr-nv-p2p-compat.h.  Never load it where
 * nvidia.ko is.
 *
 * "GPU memory" is an address space of its own: every 64 KiB-aligned
 * address is valid and is backed, on first use, by a GPU page: 64 KiB of
 * physically contiguous, zeroed kernel pages.  The addresses need not be
 * mapped in any process (like cudaMalloc() memory, which the CPU does not
 * touch either).  Through debugfs, fpgagdr-test-nvp2p/:
 *   mem      pread()/pwrite() at file offset = GPU address: what
 *            cudaMemcpy() would do
 *   free     write "ADDR LEN": cudaFree().  Every non-persistent page table
 *            overlapping the range gets its free callback, called with the
 *            double's "driver lock" held (as NVIDIA holds its own); then the
 *            range's GPU pages are dropped (pinned ones live on until their
 *            page table is released)
 *   revoke_in_map  N: the next N nvidia_p2p_dma_map_pages() calls fire the
 *            table's free callback before they return (a cudaFree racing
 *            the pin)
 *   stats    live page tables, mappings, GPU pages, callbacks, misuse
 * Module parameter persistent (0644) is nvidia_p2p_cap_persistent_pages:
 * 1 lets nvidia_p2p_get_pages() accept a NULL callback.
 *
 * The contract it enforces (misuse is a WARN, which fails a QEMU run):
 * a page table is released exactly once: by nvidia_p2p_put_pages(), or,
 * after its free callback fired, by nvidia_p2p_free_page_table();
 * free_page_table() and free_dma_mapping() only after the callback;
 * unmapping with the peer it was mapped for.  After a callback
 * put_pages() still succeeds and releases the table (the open driver
 * answers a table already unlinked with success).  Unlike NVIDIA's open
 * kernel modules, the double does not free a table itself after its
 * callback returns: it keeps it until the client releases it, and reports
 * one never released when the module is unloaded.
 */
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
#include <linux/xarray.h>

#include "fpgagdr-nv-p2p-compat.h"

#define TNV_PAGE	SZ_64K
#define TNV_ORDER	(16 - PAGE_SHIFT)

int nvidia_p2p_cap_persistent_pages;
EXPORT_SYMBOL(nvidia_p2p_cap_persistent_pages);
module_param_named(persistent, nvidia_p2p_cap_persistent_pages, int, 0644);
MODULE_PARM_DESC(persistent, "TEST DOUBLE: offer persistent pages (NULL free callback), default 0");

/**
 * struct tnv_chunk - one 64 KiB GPU page
 * @ref: one reference from the address space while not freed, one per
 *	page table holding it
 * @page: 64 KiB of contiguous pages
 */
struct tnv_chunk {
	struct kref ref;
	struct page *page;
};

enum { TNV_LIVE, TNV_REVOKED };

/**
 * struct tnv_table - a page table handed out
 * @pt: what the client sees
 * @node: in tnv_tables
 * @maps: its struct tnv_map, under tnv_lock
 * @va: GPU address of the first page
 * @state: TNV_LIVE or TNV_REVOKED (free callback fired), under tnv_lock
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
/* "the driver's lock": held across free callbacks and by put_pages */
static DEFINE_MUTEX(tnv_cb_lock);
static atomic_t tnv_revoke_in_map;
static atomic64_t tnv_ntables, tnv_nmaps, tnv_nchunks, tnv_callbacks,
	tnv_nmisuse;
static struct dentry *tnv_dbg;
static const u8 tnv_uuid[16] = "fpgagdr-testgpu";

#define tnv_misuse(fmt, ...) do {					\
	atomic64_inc(&tnv_nmisuse);					\
	WARN(1, "fpgagdr-test-nvp2p: misuse: " fmt, ##__VA_ARGS__);	\
} while (0)

static void tnv_chunk_release(struct kref *ref)
{
	struct tnv_chunk *c = container_of(ref, struct tnv_chunk, ref);

	__free_pages(c->page, TNV_ORDER);
	kfree(c);
	atomic64_dec(&tnv_nchunks);
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
	c->page = alloc_pages(GFP_KERNEL | __GFP_ZERO, TNV_ORDER);
	if (!c->page) {
		kfree(c);
		return NULL;
	}
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

/* Free a table unlinked from tnv_tables, with whatever maps it has. */
static void tnv_table_free(struct tnv_table *t)
{
	struct tnv_map *map, *tmp;
	u32 i;

	list_for_each_entry_safe(map, tmp, &t->maps, node) {
		list_del(&map->node);
		tnv_map_free(map);
	}
	for (i = 0; i < t->pt.entries; i++)
		if (t->chunks[i])
			tnv_chunk_put(t->chunks[i]);
	kfree(t->chunks);
	kfree(t->page);
	kfree(t->pt.pages);
	kfree(t->pt.gpu_uuid);
	kfree(t);
	atomic64_dec(&tnv_ntables);
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

int nvidia_p2p_get_pages(u64 p2p_token, u32 va_space, u64 virtual_address,
			 u64 length, struct nvidia_p2p_page_table **page_table,
			 void (*free_callback)(void *data), void *data)
{
	struct tnv_table *t;

	if (p2p_token || va_space || !page_table || !length ||
	    !IS_ALIGNED(virtual_address, TNV_PAGE) ||
	    !IS_ALIGNED(length, TNV_PAGE) || length / TNV_PAGE > U32_MAX)
		return -EINVAL;
	if (!free_callback && !READ_ONCE(nvidia_p2p_cap_persistent_pages))
		return -EINVAL;
	if (free_callback && !data)
		return -EINVAL;
	t = tnv_table_alloc(virtual_address, length / TNV_PAGE);
	if (!t)
		return -ENOMEM;
	t->cb = free_callback;
	t->data = data;
	spin_lock(&tnv_lock);
	list_add_tail(&t->node, &tnv_tables);
	spin_unlock(&tnv_lock);
	*page_table = &t->pt;
	return 0;
}
EXPORT_SYMBOL(nvidia_p2p_get_pages);

int nvidia_p2p_put_pages(u64 p2p_token, u32 va_space, u64 virtual_address,
			 struct nvidia_p2p_page_table *page_table)
{
	struct tnv_table *t;

	/* waits for a free callback in flight, as NVIDIA's does */
	mutex_lock(&tnv_cb_lock);
	spin_lock(&tnv_lock);
	t = tnv_find_table(page_table);
	if (t && t->va == virtual_address)
		list_del(&t->node);
	spin_unlock(&tnv_lock);
	mutex_unlock(&tnv_cb_lock);
	if (!t) {
		tnv_misuse("put_pages of an unknown or released page table\n");
		return -EINVAL;
	}
	if (t->va != virtual_address) {
		tnv_misuse("put_pages at %#llx of a table at %#llx\n",
			   virtual_address, t->va);
		return -EINVAL;
	}
	tnv_table_free(t);
	return 0;
}
EXPORT_SYMBOL(nvidia_p2p_put_pages);

/* Fire @t's callback; tnv_cb_lock held.  Context: may sleep. */
static void tnv_revoke(struct tnv_table *t)
{
	void (*cb)(void *data) = NULL;
	void *data = NULL;

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
	/* @t may be released by the callback: do not touch it after */
	cb(data);
}

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
	int ret;

	if (!peer || !page_table || !dma_mapping)
		return -EINVAL;
	spin_lock(&tnv_lock);
	t = tnv_find_table(page_table);
	ret = !t ? -ENOENT : t->state != TNV_LIVE ? -EINVAL : 0;
	spin_unlock(&tnv_lock);
	if (ret == -ENOENT)
		tnv_misuse("dma_map_pages of an unknown or released table\n");
	if (ret)
		return -EINVAL;
	map = kzalloc(sizeof(*map), GFP_KERNEL);
	if (!map)
		return -ENOMEM;
	map->table = t;
	map->m.version = NVIDIA_P2P_DMA_MAPPING_VERSION;
	map->m.page_size_type = NVIDIA_P2P_PAGE_SIZE_64KB;
	map->m.pci_dev = peer;
	atomic64_inc(&tnv_nmaps);
	ret = tnv_map_pages(peer, t, map);
	if (ret) {
		tnv_map_free(map);
		return ret;
	}
	spin_lock(&tnv_lock);
	list_add_tail(&map->node, &t->maps);
	spin_unlock(&tnv_lock);
	*dma_mapping = &map->m;
	if (atomic_add_unless(&tnv_revoke_in_map, -1, 0)) {
		mutex_lock(&tnv_cb_lock);
		tnv_revoke(t);
		mutex_unlock(&tnv_cb_lock);
	}
	return 0;
}
EXPORT_SYMBOL(nvidia_p2p_dma_map_pages);

/* Unlink a mapping the client names; NULL (and a WARN) if it may not. */
static struct tnv_map *tnv_take_map(struct nvidia_p2p_dma_mapping *m,
				    struct nvidia_p2p_page_table *pt,
				    struct pci_dev *peer, bool revoked_only)
{
	struct tnv_map *map;
	int bad = 0;

	spin_lock(&tnv_lock);
	map = tnv_find_map(m);
	if (!map)
		bad = 1;
	else if (pt && &map->table->pt != pt)
		bad = 2;
	else if (peer && map->m.pci_dev != peer)
		bad = 3;
	else if (revoked_only && map->table->state != TNV_REVOKED)
		bad = 4;
	else
		list_del(&map->node);
	spin_unlock(&tnv_lock);
	if (bad)
		tnv_misuse("mapping %s\n", bad == 1 ? "unknown or freed" :
			   bad == 2 ? "of another page table" :
			   bad == 3 ? "unmapped for another peer" :
			   "freed before its free callback");
	return bad ? NULL : map;
}

int nvidia_p2p_dma_unmap_pages(struct pci_dev *peer,
			       struct nvidia_p2p_page_table *page_table,
			       struct nvidia_p2p_dma_mapping *dma_mapping)
{
	struct tnv_map *map;

	if (!peer || !page_table || !dma_mapping)
		return -EINVAL;
	map = tnv_take_map(dma_mapping, page_table, peer, false);
	if (!map)
		return -EINVAL;
	tnv_map_free(map);
	return 0;
}
EXPORT_SYMBOL(nvidia_p2p_dma_unmap_pages);

int nvidia_p2p_free_dma_mapping(struct nvidia_p2p_dma_mapping *dma_mapping)
{
	struct tnv_map *map;

	if (!dma_mapping)
		return -EINVAL;
	map = tnv_take_map(dma_mapping, NULL, NULL, true);
	if (!map)
		return -EINVAL;
	tnv_map_free(map);
	return 0;
}
EXPORT_SYMBOL(nvidia_p2p_free_dma_mapping);

int nvidia_p2p_free_page_table(struct nvidia_p2p_page_table *page_table)
{
	struct tnv_table *t;
	int bad = 0;

	if (!page_table)
		return -EINVAL;
	spin_lock(&tnv_lock);
	t = tnv_find_table(page_table);
	if (!t)
		bad = 1;
	else if (t->state != TNV_REVOKED)
		bad = 2;
	else
		list_del(&t->node);
	spin_unlock(&tnv_lock);
	if (bad) {
		tnv_misuse("free_page_table of a %s table\n",
			   bad == 1 ? "unknown or released" : "live");
		return -EINVAL;
	}
	tnv_table_free(t);
	return 0;
}
EXPORT_SYMBOL(nvidia_p2p_free_page_table);

/* cudaFree(): fire callbacks of tables overlapping, drop the pages. */
static void tnv_free_range(u64 va, u64 len)
{
	struct tnv_table *t, *hit;
	struct tnv_chunk *c;
	u64 a;

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
}

static ssize_t tnv_free_write(struct file *file, const char __user *ubuf,
			      size_t count, loff_t *ppos)
{
	char buf[64];
	u64 va, len;

	if (count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = 0;
	if (sscanf(buf, "%llx %llx", &va, &len) != 2 || !len ||
	    va + len < va)
		return -EINVAL;
	tnv_free_range(va, len);
	return count;
}

static const struct file_operations tnv_free_fops = {
	.owner = THIS_MODULE,
	.write = tnv_free_write,
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
	seq_printf(m, "misuse %lld\n", atomic64_read(&tnv_nmisuse));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(tnv_stats);

static int __init tnv_init(void)
{
	tnv_dbg = debugfs_create_dir("fpgagdr-test-nvp2p", NULL);
	debugfs_create_file("mem", 0600, tnv_dbg, NULL, &tnv_mem_fops);
	debugfs_create_file("free", 0200, tnv_dbg, NULL, &tnv_free_fops);
	debugfs_create_atomic_t("revoke_in_map", 0600, tnv_dbg,
				&tnv_revoke_in_map);
	debugfs_create_file("stats", 0444, tnv_dbg, NULL, &tnv_stats_fops);
	pr_info("fpgagdr-test-nvp2p: TEST DOUBLE of nvidia_p2p loaded (no GPU)\n");
	return 0;
}

static void __exit tnv_exit(void)
{
	struct tnv_table *t, *tmp;
	struct tnv_chunk *c;
	unsigned long idx;

	debugfs_remove_recursive(tnv_dbg);
	/* fpgagdr is unloaded (it holds our symbols): anything left leaked */
	list_for_each_entry_safe(t, tmp, &tnv_tables, node) {
		tnv_misuse("page table at %#llx never released\n", t->va);
		list_del(&t->node);
		tnv_table_free(t);
	}
	xa_for_each(&tnv_mem, idx, c) {
		xa_erase(&tnv_mem, idx);
		tnv_chunk_put(c);
	}
}

module_init(tnv_init);
module_exit(tnv_exit);

MODULE_DESCRIPTION("TEST DOUBLE of the nvidia_p2p API for fpgagdr's QEMU tests");
MODULE_LICENSE("GPL");
