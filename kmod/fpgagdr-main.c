// SPDX-License-Identifier: GPL-2.0
/*
 * fpgagdr module entry: parameters, the device number range, the class,
 * the debugfs root and the PCI driver.
 */
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/module.h>

#include "compat.h"
#include "fpgagdr-core.h"

struct class *fpgagdr_class;
dev_t fpgagdr_devt;
struct dentry *fpgagdr_debugfs_root;

unsigned int fpgagdr_poll_us = 5;
module_param_named(poll_us, fpgagdr_poll_us, uint, 0644);
MODULE_PARM_DESC(poll_us, "Sleep between status reads in poll mode, us (default 5)");

unsigned int fpgagdr_rw_timeout_ms = 10000;
module_param_named(rw_timeout_ms, fpgagdr_rw_timeout_ms, uint, 0644);
MODULE_PARM_DESC(rw_timeout_ms, "Timeout of each read/write step on channel nodes, ms (default 10000, 0 = 10000)");

unsigned long long fpgagdr_card_size;
module_param_named(card_size, fpgagdr_card_size, ullong, 0444);
MODULE_PARM_DESC(card_size, "Card address space in bytes that transfers are checked against (default 0: unknown, only wrap-around is checked)");

static int __init fpgagdr_init(void)
{
	int ret;

	ret = alloc_chrdev_region(&fpgagdr_devt, 0,
				  FPGAGDR_MAX_DEVS * FPGAGDR_NODES, "fpgagdr");
	if (ret)
		return ret;

	fpgagdr_class = fpgagdr_class_create("fpgagdr");
	if (IS_ERR(fpgagdr_class)) {
		ret = PTR_ERR(fpgagdr_class);
		goto unregister_region;
	}

	/* debugfs is optional: its failures are not errors */
	fpgagdr_debugfs_root = debugfs_create_dir("fpgagdr", NULL);

	ret = fpgagdr_pci_register();
	if (ret)
		goto remove_debugfs;
	ret = fpgagdr_testeng_register();
	if (ret)
		goto unregister_pci;
	return 0;

unregister_pci:
	fpgagdr_pci_unregister();
remove_debugfs:
	debugfs_remove_recursive(fpgagdr_debugfs_root);
	class_destroy(fpgagdr_class);
unregister_region:
	unregister_chrdev_region(fpgagdr_devt, FPGAGDR_MAX_DEVS * FPGAGDR_NODES);
	return ret;
}

static void __exit fpgagdr_exit(void)
{
	fpgagdr_testeng_unregister();
	fpgagdr_pci_unregister();
	debugfs_remove_recursive(fpgagdr_debugfs_root);
	class_destroy(fpgagdr_class);
	unregister_chrdev_region(fpgagdr_devt, FPGAGDR_MAX_DEVS * FPGAGDR_NODES);
}

module_init(fpgagdr_init);
module_exit(fpgagdr_exit);

MODULE_DESCRIPTION("XDMA scatter-gather DMA into pinned GPU and host memory");
MODULE_LICENSE("GPL");
FPGAGDR_IMPORT_NS_DMA_BUF();
