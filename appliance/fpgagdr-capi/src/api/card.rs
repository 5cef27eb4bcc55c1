//! Opening a card (the kernel module's node, or the simulated card), its status, and
//! closing it.

use std::ffi::{CStr, c_char};
use std::sync::Arc;

use fpgagdr::{Card, FrameTrigger, PixelFormat, Platform};
use fpgagdr_sim::{LinkPreset, SimCard, SimConfig, SimSensor, TestPattern};

use crate::api::{check_out, check_ptr, no_flags, read_in, write_out};
use crate::handles;
use crate::rules::{Fail, call};
use crate::types::*;

fn sim_config(c: &fpgagdr_sim_config) -> Result<(SimConfig, u32, u32), Fail> {
    let bad = |what: String| Fail::rule("argument-valid", what);
    let preset = match c.link_preset {
        FPGAGDR_SIM_LINK_ORIN_GEN3X4 => LinkPreset::OrinGen3x4,
        FPGAGDR_SIM_LINK_X86_GEN3X8 => LinkPreset::X86Gen3x8,
        FPGAGDR_SIM_LINK_OFF => LinkPreset::Off,
        p => return Err(bad(format!("link_preset {p} is not an FPGAGDR_SIM_LINK_*"))),
    };
    let d = SimConfig::default();
    let or = |v: u64, def: u64| if v == 0 { def } else { v };
    let card_memory_bytes = or(c.card_memory_bytes, d.card_memory_bytes);
    if !card_memory_bytes.is_multiple_of(64 * 1024) {
        return Err(bad(format!(
            "card_memory_bytes {card_memory_bytes} is not a multiple of 64 KiB"
        )));
    }
    let channels = |v: u32, what: &str| match v {
        0 => Ok(4),
        1..=4 => Ok(v),
        _ => Err(bad(format!(
            "{what} {v} is not 1..4 (XDMA has at most 4, PG195)"
        ))),
    };
    let config = SimConfig {
        preset,
        card_memory_bytes,
        c2h_channels: channels(c.c2h_channels, "c2h_channels")?,
        h2c_channels: channels(c.h2c_channels, "h2c_channels")?,
    };
    let w = if c.frame_width_px == 0 {
        640
    } else {
        c.frame_width_px
    };
    let h = if c.frame_height_px == 0 {
        480
    } else {
        c.frame_height_px
    };
    Ok((config, w, h))
}

fn open_sim_card(c: &fpgagdr_sim_config) -> Result<*mut fpgagdr_card, Fail> {
    let (config, width, height) = sim_config(c)?;
    if !c.frame_base_card_addr.is_multiple_of(64 * 1024) {
        return Err(Fail::rule(
            "argument-valid",
            format_args!(
                "frame_base_card_addr {:#x} is not 64 KiB aligned",
                c.frame_base_card_addr
            ),
        ));
    }
    let sim = Arc::new(SimCard::new(config));
    let pattern = TestPattern::new(PixelFormat::Mono8, width, height)
        .map_err(|e| Fail::from(fpgagdr::Error::from(e)))?;
    let fps = if c.frame_period_ns == 0 {
        0.0
    } else {
        1e9 / c.frame_period_ns as f64
    };
    let sensor = SimSensor::new(sim.clone(), Box::new(pattern), fps, c.frame_base_card_addr)?;
    let card = Card::from_backend(sim);
    Ok(handles::open_card(
        card,
        Ok(Box::new(sensor) as Box<dyn FrameTrigger>),
    ))
}

/// Opens a card: `path` is a control node of the kernel module (`"/dev/fpgagdr0"`), or
/// `"sim"` for a simulated card with the defaults of `fpgagdr_open_sim` (so a program
/// is developed without a card and switched by its argument). Writes the handle into
/// `*card_out`; `fpgagdr_close` releases it. A module node's card gets the library's
/// frame trigger (the module's `WAIT_FRAME`); a card that does not speak the frame
/// protocol opens all the same, without `FPGAGDR_CAP_FRAME_TRIGGER` (its frame calls
/// answer rule `card-protocol`).
///
/// Returns 0; `-ENODEV` (rule `card-present`: no node, no permission (the message
/// names the `fpgagdr` group), no card behind it), `-ENOTTY` (rule `abi`: not an
/// fpgagdr node), `-EPROTO` (rule `abi-version`: the module speaks another ABI, both
/// versions named), `-EFAULT`, `-EINVAL` (rules `flags`, `argument-valid`: path not
/// UTF-8).
/// Thread safety: any thread; each open gives an independent handle (two handles of one
/// node are two open files: pins of one are unknown to the other).
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `card_out` is NULL or writable.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgagdr_open(
    path: *const c_char,
    flags: u64,
    card_out: *mut *mut fpgagdr_card,
) -> i32 {
    call(|| {
        if path.is_null() {
            return Err(Fail::null("path"));
        }
        check_ptr(card_out, "card_out")?;
        no_flags("fpgagdr_open", flags)?;
        // SAFETY: non-NULL and NUL-terminated by the function's contract.
        let path = unsafe { CStr::from_ptr(path) };
        let path = path.to_str().map_err(|_| {
            Fail::rule("argument-valid", format_args!("path {path:?} is not UTF-8"))
        })?;
        let handle = if path == "sim" {
            open_sim_card(&default_sim_config())?
        } else {
            let card = Card::open_path(path)?;
            // The library's own frame trigger of the card (a `KernelTrigger` over the
            // module's FRAME_INFO and WAIT_FRAME), taken as fpgagdrd and fpgagdr-bench
            // take it. A card whose bitstream does not speak the frame protocol still
            // opens (its channels work); its frame calls answer the error given here
            // (rule `card-protocol`, naming the part at fault).
            let trigger = card.frame_trigger().map_err(Fail::from);
            handles::open_card(card, trigger)
        };
        // SAFETY: checked non-NULL; writable by the function's contract.
        unsafe { card_out.write_unaligned(handle) };
        Ok(())
    })
}

fn default_sim_config() -> fpgagdr_sim_config {
    fpgagdr_sim_config {
        struct_size_bytes: size_of::<fpgagdr_sim_config>() as u32,
        link_preset: FPGAGDR_SIM_LINK_ORIN_GEN3X4,
        card_memory_bytes: 0,
        c2h_channels: 0,
        h2c_channels: 0,
        frame_width_px: 0,
        frame_height_px: 0,
        frame_period_ns: 0,
        frame_base_card_addr: 0,
    }
}

/// Opens a simulated card (an XDMA card in software: real copies, transfer times of
/// the measured platform its link preset names, a simulated sensor writing an 8-bit
/// grey test pattern into 4 frame slots from `frame_base_card_addr`). Its status says
/// `simulated` and `FPGAGDR_PLATFORM_SIM`. `config` may be NULL for the defaults.
///
/// Returns 0, `-EFAULT`, `-EMSGSIZE`, `-EINVAL` (rules `flags`, `argument-valid`: a
/// field out of range, named), `-ERANGE` (rule `card-bounds`: the frame slots do not
/// fit in card memory), `-EBADMSG` (rule `frame`: the frame geometry).
/// Thread safety: any thread; each call gives an independent card.
///
/// # Safety
/// `config` is NULL or points to a readable `struct fpgagdr_sim_config`; `card_out`
/// is NULL or writable.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgagdr_open_sim(
    config: *const fpgagdr_sim_config,
    flags: u64,
    card_out: *mut *mut fpgagdr_card,
) -> i32 {
    call(|| {
        let config = if config.is_null() {
            default_sim_config()
        } else {
            // SAFETY: the function's contract.
            unsafe { read_in(config, "fpgagdr_sim_config") }?
        };
        check_ptr(card_out, "card_out")?;
        no_flags("fpgagdr_open_sim", flags)?;
        let handle = open_sim_card(&config)?;
        // SAFETY: checked non-NULL; writable by the function's contract.
        unsafe { card_out.write_unaligned(handle) };
        Ok(())
    })
}

/// Closes `card`: unregisters and unpins every buffer still pinned or registered on it
/// (their unpin errors are not returned: call `fpgagdr_unpin_buffer` /
/// `fpgagdr_release_buffer` first to see them). The handle is invalid afterwards (`-EBADF` if used, never a crash).
///
/// Returns 0, `-EFAULT` (NULL), `-EBADF` (rule `card-handle`: never opened or already
/// closed).
/// Thread safety: any thread. Calls on `card` running on other threads finish normally;
/// the card is released when the last of them returns. Calls that start after it
/// returns get `-EBADF`.
///
/// # Safety
/// None beyond the types: the handle is looked up, never dereferenced.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgagdr_close(card: *mut fpgagdr_card) -> i32 {
    call(|| handles::close_card(card))
}

/// Writes `card`'s identity and limits into `*status_out` (set its `struct_size_bytes`
/// first).
///
/// Returns 0, `-EFAULT`, `-EBADF`, `-EMSGSIZE`.
/// Thread safety: any thread, concurrently with every call on the card (the status is
/// read once at open).
///
/// # Safety
/// `status_out` is NULL or points to a writable `struct fpgagdr_card_status`.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgagdr_get_status(
    card: *const fpgagdr_card,
    status_out: *mut fpgagdr_card_status,
) -> i32 {
    call(|| {
        let entry = handles::card(card)?;
        // SAFETY: the function's contract.
        unsafe { check_out(status_out, "fpgagdr_card_status", false) }?;
        let st = entry.card.status();
        let caps = st.capabilities;
        let bit = |on: bool, b: u32| if on { b } else { 0 };
        let s = fpgagdr_card_status {
            struct_size_bytes: size_of::<fpgagdr_card_status>() as u32,
            platform: match st.platform {
                Platform::Tegra => FPGAGDR_PLATFORM_TEGRA,
                Platform::Desktop => FPGAGDR_PLATFORM_DESKTOP,
                Platform::Sim => FPGAGDR_PLATFORM_SIM,
            },
            simulated: st.simulated as u32,
            c2h_channels: st.c2h_channels,
            h2c_channels: st.h2c_channels,
            capabilities: bit(caps.gpu_direct, FPGAGDR_CAP_GPU_DIRECT)
                | bit(caps.host_dma, FPGAGDR_CAP_HOST_DMA)
                | bit(caps.interrupts, FPGAGDR_CAP_INTERRUPTS)
                | bit(entry.has_trigger(), FPGAGDR_CAP_FRAME_TRIGGER),
            gpu_page_size_bytes: st.gpu_page_size,
            alignment_bytes: st.alignment,
            card_memory_bytes: st.card_memory_bytes,
            // Every back-end but fpgagdr-sim's is the kernel module's (which reports
            // `simulated` too when its engines are the module's test engine).
            module_abi_version: if st.platform == Platform::Sim {
                0
            } else {
                FPGAGDR_MODULE_ABI_VERSION
            },
            reserved: 0,
            name: c_string(&st.name),
        };
        // SAFETY: checked above.
        unsafe { write_out(status_out, s) };
        Ok(())
    })
}
