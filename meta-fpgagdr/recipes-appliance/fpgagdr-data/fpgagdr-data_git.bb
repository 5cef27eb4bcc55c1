SUMMARY = "fpgagdr data: the default model with its labels and licences, and demo frames"
DESCRIPTION = "EfficientNet-Lite0 (ONNX, and its fp16 copy for inference.precision fp16 \
               on the CUDA provider) and its ImageNet labels from models/, \
               checked against models/SHA256SUMS, in the service's data directory; \
               and, in the -frames package, the five CC0 / public-domain \
               photographs the simulated card replays."
HOMEPAGE = "https://example.invalid/fpgagdr"
SECTION = "misc"
LICENSE = "Apache-2.0 & BSD-3-Clause & CC0-1.0 & PD"
LICENSE:${PN} = "Apache-2.0 & BSD-3-Clause"
LICENSE:${PN}-frames = "CC0-1.0 & PD"
# The frames' licences are their notes in scikit-image's _fetchers.py (camera,
# astronaut, chelsea, coffee, rocket), pinned with the wheel.
LIC_FILES_CHKSUM = "file://models/LICENSE.efficientnet-lite0;md5=24eab41cbdc6ba44eed754f8d5c26cff \
                    file://models/LICENSE.labels;md5=1f2593f1ddbd028b8ff52191b7057956 \
                    file://${FRAMES_DIR}/_fetchers.py;beginline=360;endline=372;md5=a9fed39db9e2ca5e2ffd841b825ee322 \
                    file://${FRAMES_DIR}/_fetchers.py;beginline=403;endline=414;md5=c8d7c646e8a77f5f80d6fe7f76190d48 \
                    file://${FRAMES_DIR}/_fetchers.py;beginline=911;endline=919;md5=3aaab3065002ecb0b7c09b2b948d74de \
                    file://${FRAMES_DIR}/_fetchers.py;beginline=933;endline=942;md5=4e05b0d2356a157611ff5801e9cd8c60 \
                    file://${FRAMES_DIR}/_fetchers.py;beginline=1053;endline=1066;md5=3bfa73ea4eecd51446baf5a639758b82"

require recipes-appliance/include/fpgagdr-source.inc

# The frames come from the scikit-image 0.26.0 wheel, as in appliance/scripts/fetch-deps.sh
# (docs/frames.md). A wheel is a zip: naming the download .zip makes do_unpack unzip it.
SRC_URI += "https://files.pythonhosted.org/packages/a5/2a/e71c1a7d90e70da67b88ccc609bd6ae54798d5847369b15d3a8052232f9d/scikit_image-0.26.0-cp311-cp311-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl;name=frames;downloadfilename=scikit_image-0.26.0-data.zip;subdir=scikit-image"
SRC_URI[frames.sha256sum] = "74aa5518ccea28121f57a95374581d3b979839adc25bb03f289b1bc9b99c58af"
# base.bbclass adds unzip-native only for URLs ending in .zip.
do_unpack[depends] += "unzip-native:do_populate_sysroot"

FRAMES_DIR = "${FPGAGDR_UNPACKDIR}/scikit-image/skimage/data"
FRAMES = "camera.png chelsea.png coffee.png astronaut.png rocket.jpg"

# Where fpgagdrd resolves relative paths when FPGAGDR_DATA_DIR is unset.
FPGAGDR_DATADIR = "${datadir}/fpgagdr"

inherit allarch

do_configure[noexec] = "1"
do_compile[noexec] = "1"

do_install() {
    # The model is 18 MB of committed binary: refuse a copy that differs from its checksum.
    (cd ${S}/models && sha256sum --check --quiet SHA256SUMS)
    install -d ${D}${FPGAGDR_DATADIR}/models ${D}${FPGAGDR_DATADIR}/frames
    install -m 0644 ${S}/models/efficientnet-lite0.onnx ${S}/models/efficientnet-lite0.fp16.onnx \
        ${S}/models/efficientnet-lite0.labels.txt \
        ${S}/models/LICENSE.efficientnet-lite0 ${S}/models/LICENSE.labels \
        ${D}${FPGAGDR_DATADIR}/models/
    for f in ${FRAMES}; do
        install -m 0644 ${FRAMES_DIR}/$f ${D}${FPGAGDR_DATADIR}/frames/
    done
}

PACKAGES =+ "${PN}-frames"
FILES:${PN} += "${FPGAGDR_DATADIR}/models"
FILES:${PN}-frames += "${FPGAGDR_DATADIR}/frames"
