SUMMARY = "ONNX Runtime shared library, CPU execution provider (prebuilt)"
DESCRIPTION = "libonnxruntime from Microsoft's official aarch64 wheel on PyPI, \
               pinned by SHA-256: the library fpgagdrd loads at run time (ort \
               load-dynamic, ORT_DYLIB_PATH). CPU provider only: the alternative \
               to the source build with the CUDA and TensorRT providers \
               (onnxruntime_${PV}.bb) for an image whose model runs on the CPU, \
               chosen with VIRTUAL-RUNTIME_onnxruntime (docs/yocto.md)."
HOMEPAGE = "https://onnxruntime.ai"
SECTION = "libs"
# ONNX Runtime's own code is MIT; the library links in third-party code under other
# licences, each text in ThirdPartyNotices.txt (installed with the library): abseil-cpp,
# onnx, flatbuffers, dlpack, KleidiAI (Apache-2.0); protobuf, re2 (BSD-3-Clause);
# pytorch/cpuinfo, pthreadpool (BSD-2-Clause); Boost.Mp11 (BSL-1.0); Eigen (MPL-2.0,
# built MPL-2.0-only); date, GSL, nlohmann/json, SafeInt, FP16, FXdiv, psimd, utf8_range
# (MIT). The same list as the source build (onnxruntime_${PV}.bb) without CUTLASS and
# cudnn-frontend, which only the CUDA provider uses.
LICENSE = "MIT & Apache-2.0 & BSD-3-Clause & BSD-2-Clause & BSL-1.0 & MPL-2.0"
LIC_FILES_CHKSUM = "file://onnxruntime/LICENSE;md5=0f7e3b1308cb5c00b372a6e78835732d \
                    file://onnxruntime/ThirdPartyNotices.txt;md5=ea090a03326d526adefc1194872d3159"

# The same release and file appliance/scripts/fetch-deps.sh pins for development.
# A wheel is a zip: naming the download .zip makes do_unpack unzip it.
SRC_URI = "https://files.pythonhosted.org/packages/02/ee/b173a49293b146b54bd057bf8681a015aef764d8f56d999ad8c6e53ab18d/onnxruntime-${PV}-cp311-cp311-manylinux_2_28_aarch64.whl;downloadfilename=onnxruntime-${PV}-manylinux_2_28_aarch64.zip;subdir=${BP}"
SRC_URI[sha256sum] = "da05378364c44d4407e463982d2bf8d5e4cfea873283757e48beeb41df97b7f3"
# base.bbclass adds unzip-native only for URLs ending in .zip.
do_unpack[depends] += "unzip-native:do_populate_sysroot"

# Only the aarch64 wheel is pinned (glibc >= 2.28).
COMPATIBLE_HOST = "aarch64.*-linux"

do_configure[noexec] = "1"
do_compile[noexec] = "1"

do_install() {
    install -d ${D}${libdir}
    install -m 0755 ${S}/onnxruntime/capi/libonnxruntime.so.${PV} ${D}${libdir}/
    # The SONAME; the service's unit points ORT_DYLIB_PATH at it.
    ln -s libonnxruntime.so.${PV} ${D}${libdir}/libonnxruntime.so.1
    install -d ${D}${datadir}/licenses/${BPN}
    install -m 0644 ${S}/onnxruntime/LICENSE ${S}/onnxruntime/ThirdPartyNotices.txt \
        ${D}${datadir}/licenses/${BPN}/
}

# Notices ship with the library, not in a -doc package nobody installs.
FILES:${PN} += "${datadir}/licenses/${BPN}"
# Microsoft's release binary comes stripped: nothing to strip or split off.
INHIBIT_PACKAGE_STRIP = "1"
INHIBIT_PACKAGE_DEBUG_SPLIT = "1"
# The same libonnxruntime.so.1 as the source build.
RCONFLICTS:${PN} = "onnxruntime"
