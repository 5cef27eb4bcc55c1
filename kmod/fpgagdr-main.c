// SPDX-License-Identifier: GPL-2.0
/*
 * fpgagdr module entry: device numbers and class, the debugfs root, the
 * PCI driver (and, in test builds only, the software card's driver).
 */
#include <linux/module.h>

#include "compat.h"
#include "fpgagdr-card.h"

static int __init fpgagdr_init(void)
{
	int ret;

	ret = fpgagdr_dev_init();
	if (ret)
		return ret;
	fpgagdr_debugfs_init();
	ret = fpgagdr_pci_register();
	if (ret)
		goto exit_debugfs;
	ret = fpgagdr_testeng_register();
	if (ret)
		goto unregister_pci;
	return 0;

unregister_pci:
	fpgagdr_pci_unregister();
exit_debugfs:
	fpgagdr_debugfs_exit();
	fpgagdr_dev_exit();
	return ret;
}

static void __exit fpgagdr_exit(void)
{
	fpgagdr_testeng_unregister();
	fpgagdr_pci_unregister();
	fpgagdr_debugfs_exit();
	fpgagdr_dev_exit();
}

module_init(fpgagdr_init);
module_exit(fpgagdr_exit);

MODULE_DESCRIPTION("XDMA scatter-gather DMA into pinned GPU and host memory");
MODULE_LICENSE("GPL");
/* the same as dkms.conf's PACKAGE_VERSION and the Rust workspace's (check.sh) */
MODULE_VERSION("0.1.0");
FPGAGDR_IMPORT_NS_DMA_BUF();
