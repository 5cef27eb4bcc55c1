/* SPDX-License-Identifier: GPL-2.0 */
/*
 * TEST-ONLY: what the kernel's drivers/dma-buf/udmabuf.c needs to build
 * as an external module against Debian's kernel headers.
 * kmod/qemu/run.sh includes this file into the extracted udmabuf.c right
 * after its last #include; nothing else of the kernel's file changes.
 *
 * udmabuf is a built-in-only driver ("bool" in Kconfig) and uses three
 * functions the kernel does not export to modules:
 *
 * - shmem_mapping(): replaced by the superblock's magic (TMPFS_MAGIC),
 *   which is what makes a file shmem-backed; memfd_create() files live
 *   on the kernel's internal tmpfs mount.
 * - memfd_fcntl(F_GET_SEALS): a shmem file's seals are a field of its
 *   inode (shmem_fs.h), read without a lock as mm/memfd.c reads them;
 *   -EINVAL for any other file, as there.
 * - is_file_hugepages() (is_file_shm_hugepages() behind it): hugetlbfs
 *   memfds are refused (EBADFD) instead of imported; the tests use shmem
 *   memfds only.
 *
 * And the dma-buf core's symbols are in the DMA_BUF namespace, which a
 * built-in driver need not import.
 */
#ifndef UDMABUF_OUT_OF_TREE_H
#define UDMABUF_OUT_OF_TREE_H

#include <linux/fs.h>
#include <linux/magic.h>
#include <linux/module.h>
#include <linux/shmem_fs.h>

static inline bool udmabuf_test_shmem_mapping(struct address_space *mapping)
{
	return mapping->host && mapping->host->i_sb->s_magic == TMPFS_MAGIC;
}

static inline int udmabuf_test_seals(struct file *file)
{
	if (!udmabuf_test_shmem_mapping(file->f_mapping))
		return -EINVAL;
	return SHMEM_I(file_inode(file))->seals;
}

#define shmem_mapping(mapping)		udmabuf_test_shmem_mapping(mapping)
#define memfd_fcntl(file, cmd, arg)	udmabuf_test_seals(file)
#define is_file_hugepages(file)		false

MODULE_IMPORT_NS(DMA_BUF);
MODULE_DESCRIPTION("TEST-ONLY build of the kernel's udmabuf exporter");

#endif /* UDMABUF_OUT_OF_TREE_H */
