// SPDX-License-Identifier: GPL-2.0
/* Compiles when vm_flags_set() exists (6.3 and later). */
#include <linux/mm.h>

void fpgagdr_probe(struct vm_area_struct *vma);

void fpgagdr_probe(struct vm_area_struct *vma)
{
	vm_flags_set(vma, VM_IO);
}
