SUMMARY = "ONNX Runtime built from source with the CUDA and TensorRT execution providers"
DESCRIPTION = "libonnxruntime, the library fpgagdrd loads at run time (ort \
               load-dynamic, ORT_DYLIB_PATH), built against meta-tegra's CUDA, cuDNN \
               and TensorRT: the CPU execution provider built in, the CUDA and \
               TensorRT providers as libraries of their own beside it, which ONNX \
               Runtime loads when a session asks for them. The release the service's \
               ort crate (api-31) and appliance/scripts/fetch-deps.sh use."
HOMEPAGE = "https://onnxruntime.ai"
SECTION = "libs"
# ONNX Runtime's own code is MIT; the build links in the pinned archives of
# onnxruntime-deps.inc (cmake/deps.txt), whose licence texts ThirdPartyNotices.txt
# carries (installed with the library): abseil-cpp, onnx, flatbuffers, dlpack, KleidiAI
# (Apache-2.0); protobuf, re2, CUTLASS (BSD-3-Clause); pytorch/cpuinfo, pthreadpool
# (BSD-2-Clause); Boost.Mp11 (BSL-1.0); Eigen (MPL-2.0, built MPL-2.0-only); date, GSL,
# nlohmann/json, SafeInt, FP16, FXdiv, psimd, utf8_range, cudnn-frontend (MIT). Not
# built, so not in the list: the test and benchmark frameworks, pybind11, onnx-tensorrt
# (the TensorRT provider uses TensorRT's own parser), XNNPACK, mimalloc.
LICENSE = "MIT & Apache-2.0 & BSD-3-Clause & BSD-2-Clause & BSL-1.0 & MPL-2.0"
LIC_FILES_CHKSUM = "file://LICENSE;md5=0f7e3b1308cb5c00b372a6e78835732d \
                    file://ThirdPartyNotices.txt;md5=ea090a03326d526adefc1194872d3159"

# cudnn, libcublas, libcufft, libcurand: the CUDA provider; tensorrt-core (libnvinfer)
# and tensorrt-plugins (libnvonnxparser, the ONNX parser TensorRT ships): the TensorRT
# provider; cuda-cccl: CUB and Thrust headers. The cuda class adds the CUDA toolkit
# (cuda-libraries, nvcc for the build host) and CMAKE_CUDA_ARCHITECTURES from the
# machine (87 on Orin, 110 on Thor).
DEPENDS = "cuda-cccl cudnn libcublas libcufft libcurand tensorrt-core tensorrt-plugins zlib"

# The release's source archive (its top folder is onnxruntime-${PV}, oe-core's default
# S); every archive its CMake would download at configure time (cmake/deps.txt) is a
# pinned download of its own in onnxruntime-deps.inc, generated from that archive by
# scripts/ort-deps-to-inc.py.
# nooelint: oelint.vars.srcurichecksum - SRC_URI[sha256sum] is in onnxruntime-deps.inc, generated with the other pins
SRC_URI = "https://github.com/microsoft/onnxruntime/archive/refs/tags/v${PV}.tar.gz;downloadfilename=onnxruntime-${PV}.tar.gz"
require onnxruntime-deps.inc

# CUDA, cuDNN and TensorRT come from meta-tegra, for Jetson only; TensorRT needs the
# opengl distro feature.
COMPATIBLE_MACHINE = "(tegra)"
inherit cmake cuda features_check
REQUIRED_DISTRO_FEATURES = "opengl"

OECMAKE_SOURCEPATH = "${S}/cmake"
# ONNX Runtime's CMake options for what its tools/ci_build/build.py calls
# --build_shared_lib --use_cuda --use_tensorrt --use_tensorrt_builtin_parser
# --skip_tests, without Python and without the test and benchmark programs (option
# names as ONNX Runtime has long had them; not yet checked against a 1.31.1 configure
# run, docs/yocto.md). FETCHCONTENT_TRY_FIND_PACKAGE_MODE=NEVER: every
# third-party library is the pinned one from deps.txt, never whatever the sysroot holds.
# Flash and memory-efficient attention are large-language-model kernels the appliance's
# image models do not use; leaving them out cuts hours and gigabytes from the build.
EXTRA_OECMAKE = "\
    -Donnxruntime_BUILD_SHARED_LIB=ON \
    -Donnxruntime_BUILD_UNIT_TESTS=OFF \
    -Donnxruntime_BUILD_BENCHMARKS=OFF \
    -Donnxruntime_ENABLE_PYTHON=OFF \
    -Donnxruntime_USE_CUDA=ON \
    -Donnxruntime_CUDA_HOME=${STAGING_DIR_HOST}/usr/local/cuda-${CUDA_VERSION} \
    -Donnxruntime_CUDNN_HOME=${STAGING_DIR_HOST}${prefix} \
    -Donnxruntime_NVCC_THREADS=1 \
    -Donnxruntime_USE_FLASH_ATTENTION=OFF \
    -Donnxruntime_USE_MEMORY_EFFICIENT_ATTENTION=OFF \
    -Donnxruntime_USE_TENSORRT=ON \
    -Donnxruntime_USE_TENSORRT_BUILTIN_PARSER=ON \
    -Donnxruntime_TENSORRT_HOME=${STAGING_DIR_HOST}${prefix} \
    -DFETCHCONTENT_TRY_FIND_PACKAGE_MODE=NEVER \
    -DCMAKE_BUILD_TYPE=Release \
"

python ort_deps_generated() {
    if d.getVar('ORT_DEPS_VERSION') != d.getVar('PV'):
        bb.fatal("onnxruntime-deps.inc pins the downloads of ONNX Runtime '%s', not %s "
                 "(rule: every archive ONNX Runtime's CMake would download is a pinned "
                 "SRC_URI). Download %s once and run "
                 "meta-fpgagdr/scripts/ort-deps-to-inc.py on it (docs/yocto.md)."
                 % (d.getVar('ORT_DEPS_VERSION') or 'none', d.getVar('PV'),
                    d.getVar('SRC_URI').split()[0].split(';')[0]))
}
ort_deps_generated[doc] = "Stops do_fetch while onnxruntime-deps.inc is not generated for this release"
do_fetch[prefuncs] += "ort_deps_generated"

# Each pinned archive where ONNX Runtime's CMake looks before it downloads
# (<source>/mirror/<URL without https://>; CMake still checks deps.txt's SHA-1), once
# the release's deps.txt is known to be the one the pins were generated from: then
# nothing it lists for this build is left to download, and configure, which runs
# without the network, never tries.
python ort_deps_mirror() {
    import hashlib, os, shutil
    s = d.getVar('S')
    deps_txt = os.path.join(s, 'cmake', 'deps.txt')
    with open(deps_txt, 'rb') as f:
        if hashlib.sha256(f.read()).hexdigest() != d.getVar('ORT_DEPS_TXT_SHA256'):
            bb.fatal("%s is not the deps.txt onnxruntime-deps.inc was generated from "
                     "(rule: every archive ONNX Runtime's CMake would download is a pinned "
                     "SRC_URI): regenerate it with meta-fpgagdr/scripts/ort-deps-to-inc.py"
                     % deps_txt)
    for entry in (d.getVar('ORT_DEPS_MIRROR') or '').split():
        local, path, _sha1 = entry.split(':')
        dest = os.path.join(s, 'mirror', path)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(os.path.join(d.getVar('FPGAGDR_UNPACKDIR'), 'ort-deps', local), dest)
}
ort_deps_mirror[doc] = "Puts the pinned archives where ONNX Runtime's CMake looks before it downloads"
do_configure[prefuncs] += "ort_deps_mirror"

do_install:append() {
    # The provider libraries ONNX Runtime loads from the folder libonnxruntime is in.
    for p in shared cuda tensorrt; do
        if [ ! -e ${D}${libdir}/libonnxruntime_providers_$p.so ]; then
            install -m 0755 ${B}/libonnxruntime_providers_$p.so ${D}${libdir}/
        fi
    done
    install -d ${D}${datadir}/licenses/${BPN}
    install -m 0644 ${S}/LICENSE ${S}/ThirdPartyNotices.txt ${D}${datadir}/licenses/${BPN}/
}

# The providers are unversioned libraries that are loaded, not linked against: they
# belong to the runtime packages (listed before -dev, so they claim them first; real
# files, not symlinks, so the dev-so check has nothing to say). Each provider package pulls in its
# NVIDIA libraries through their shared-library dependencies (cudart, cublas, cudnn;
# libnvinfer, libnvonnxparser).
PACKAGES =+ "${PN}-provider-cuda ${PN}-provider-tensorrt"
FILES:${PN} += "${libdir}/libonnxruntime_providers_shared.so ${datadir}/licenses/${BPN}"
FILES:${PN}-provider-cuda += "${libdir}/libonnxruntime_providers_cuda.so"
FILES:${PN}-provider-tensorrt += "${libdir}/libonnxruntime_providers_tensorrt.so"
RDEPENDS:${PN}-provider-cuda += "${PN}"
RDEPENDS:${PN}-provider-tensorrt += "${PN}"
# Both providers come with the library; an image can leave one out (BAD_RECOMMENDATIONS)
# and ONNX Runtime falls back to the next provider, down to the built-in CPU one.
RRECOMMENDS:${PN} += "${PN}-provider-cuda ${PN}-provider-tensorrt"
# The same libonnxruntime.so.1 as the prebuilt CPU-only library.
RCONFLICTS:${PN} = "onnxruntime-bin"
