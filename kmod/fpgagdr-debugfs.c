// SPDX-License-Identifier: GPL-2.0
/*
 * debugfs: /sys/kernel/debug/fpgagdr/fpgagdrN/{counters,engines}.
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "fpgagdr-core.h"

static struct dentry *fpgagdr_debugfs_root;

/**
 * fpgagdr_debugfs_init() - create /sys/kernel/debug/fpgagdr
 *
 * debugfs is optional: its failures are not errors.
 *
 * Context: module init.
 */
void fpgagdr_debugfs_init(void)
{
	fpgagdr_debugfs_root = debugfs_create_dir("fpgagdr", NULL);
}

/**
 * fpgagdr_debugfs_exit() - remove /sys/kernel/debug/fpgagdr
 *
 * Context: module exit.
 */
void fpgagdr_debugfs_exit(void)
{
	debugfs_remove_recursive(fpgagdr_debugfs_root);
}

/**
 * fpgagdr_debugfs_dir() - the module's debugfs directory
 *
 * Context: any.
 * Return: the directory (or an error pointer debugfs accepts).
 */
struct dentry *fpgagdr_debugfs_dir(void)
{
	return fpgagdr_debugfs_root;
}

static int fpgagdr_counters_show(struct seq_file *m, void *unused)
{
	struct fpgagdr_dev *fdev = m->private;
	struct fpgagdr_stats *st = &fdev->stats;

	seq_printf(m, "pins %lld\n", atomic64_read(&st->pins));
	seq_printf(m, "pins_total %lld\n", atomic64_read(&st->pins_total));
	seq_printf(m, "cache_hits %lld\n", atomic64_read(&st->cache_hits));
	seq_printf(m, "cache_misses %lld\n", atomic64_read(&st->cache_misses));
	seq_printf(m, "transfers %lld\n", atomic64_read(&st->transfers));
	seq_printf(m, "transfer_bytes %lld\n",
		   atomic64_read(&st->transfer_bytes));
	seq_printf(m, "timeouts %lld\n", atomic64_read(&st->timeouts));
	seq_printf(m, "aborts %lld\n", atomic64_read(&st->aborts));
	seq_printf(m, "errors %lld\n", atomic64_read(&st->errors));
	seq_printf(m, "stop_failures %lld\n", atomic64_read(&st->stop_failures));
	seq_printf(m, "fences %lld\n", atomic64_read(&st->fences));
	seq_printf(m, "link_errors %lld\n", atomic64_read(&st->link_errors));
	seq_printf(m, "fenced %d\n", READ_ONCE(fdev->fenced));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(fpgagdr_counters);

static int fpgagdr_engines_show(struct seq_file *m, void *unused)
{
	static const char * const dir_name[] = { "c2h", "h2c" };
	struct fpgagdr_dev *fdev = m->private;
	struct fpgagdr_engine *eng;
	u32 dir, ch;

	for (dir = 0; dir < 2; dir++) {
		for (ch = 0; ch < fdev->nch[dir]; ch++) {
			eng = fdev->eng[dir][ch];
			seq_printf(m, "%s_%u flags %#lx align %u gran %u %s\n",
				   dir_name[dir], ch, READ_ONCE(eng->flags),
				   eng->addr_align, eng->len_gran,
				   eng->use_irq ? "irq" : "poll");
		}
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(fpgagdr_engines);

/**
 * fpgagdr_debugfs_add() - create the card's debugfs directory
 * @fdev: the card, numbered
 *
 * debugfs failures are ignored, as debugfs wants.
 *
 * Context: process context.
 */
void fpgagdr_debugfs_add(struct fpgagdr_dev *fdev)
{
	fdev->dbg = debugfs_create_dir(fdev->name, fpgagdr_debugfs_root);
	debugfs_create_file("counters", 0444, fdev->dbg, fdev,
			    &fpgagdr_counters_fops);
	debugfs_create_file("engines", 0444, fdev->dbg, fdev,
			    &fpgagdr_engines_fops);
}

/**
 * fpgagdr_debugfs_remove() - remove the card's debugfs directory
 * @fdev: the card
 *
 * Context: process context.
 */
void fpgagdr_debugfs_remove(struct fpgagdr_dev *fdev)
{
	debugfs_remove_recursive(fdev->dbg);
	fdev->dbg = NULL;
}
