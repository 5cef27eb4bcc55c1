# fpgagdr: a release build refuses to sign the bootloader capsule with EDK2's test
# certificates (the check: classes-recipe/fpgagdr_rauc.bbclass, as for RAUC's keys;
# docs/ota.md, "Keys"). DISTRO fpgagdr only.

# (Written without spaces so that the layer check reads it as one word.)
FPGAGDR_RAUC_CLASS:fpgagdr = "fpgagdr_rauc"
inherit_defer ${@d.getVar('FPGAGDR_RAUC_CLASS')or''}
do_compile[prefuncs] += "${@'fpgagdr_check_capsule_certs' if 'fpgagdr' in d.getVar('DISTROOVERRIDES').split(':') else ''}"
