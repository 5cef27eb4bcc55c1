//! The `Backend` seam is safe to implement: a back-end gets its memory as an
//! `Arc<PinnedRegion>`, moves bytes through `PinnedRegion::access`, and a back-end that
//! keeps the region after its `unpin` (a bug, or a back-end that lags) can no longer
//! reach the memory once `PinnedBuffer` has released it. Driven through `Card`, with a
//! minimal CPU-copying back-end written here (no hardware is stood in for: the point is
//! the seam itself).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fpgagdr::{
    Backend, Capabilities, Card, CardStatus, Direction, DmaMemory, Error, FrameCheck, FrameRef,
    FrameSlot, FrameTransfer, Handle, PinnedRegion, Platform, Result, Transfer, TransferRequest,
};

/// A back-end that fills every C2H with one byte value and keeps every region it was
/// ever given, also after unpin.
#[derive(Debug, Default)]
struct KeepsRegions {
    regions: Mutex<Vec<Arc<PinnedRegion>>>,
}

impl Backend for KeepsRegions {
    fn status(&self) -> CardStatus {
        CardStatus {
            name: "backend-seam test back-end".into(),
            platform: Platform::Desktop,
            simulated: true,
            gpu_page_size: 4096,
            alignment: 4096,
            c2h_channels: 1,
            h2c_channels: 1,
            card_memory_bytes: 1 << 20,
            capabilities: Capabilities {
                gpu_direct: true,
                host_dma: false,
                interrupts: false,
            },
        }
    }

    fn pin(&self, region: Arc<PinnedRegion>) -> Result<Handle> {
        let mut r = self.regions.lock().unwrap();
        r.push(region);
        Ok(Handle(r.len() as u64 - 1))
    }

    fn unpin(&self, _handle: Handle) -> Result<()> {
        Ok(()) // and keeps the region: the card must make that harmless
    }

    fn transfer(&self, req: &TransferRequest) -> Result<Transfer> {
        let region = self.regions.lock().unwrap()[req.handle.0 as usize].clone();
        let bytes = vec![0x5a; req.len as usize];
        match req.dir {
            Direction::C2H => {
                region
                    .access(|m| m.write(req.offset, &bytes))
                    .ok_or(Error::UnknownHandle {
                        handle: req.handle.0,
                    })??
            }
            Direction::H2C => unreachable!("not used here"),
        }
        Ok(Transfer {
            bytes: req.len,
            elapsed: Duration::ZERO,
        })
    }

    fn host_read(&self, _: u32, _: u64, _: &mut [u8], _: Duration) -> Result<Transfer> {
        unreachable!("not used here")
    }

    fn host_write(&self, _: u32, _: u64, _: &[u8], _: Duration) -> Result<Transfer> {
        unreachable!("not used here")
    }
}

#[test]
fn a_region_kept_after_unpin_cannot_reach_the_memory() {
    let backend = Arc::new(KeepsRegions::default());
    let card = Card::from_backend(backend.clone());
    let buf = card.pin(DmaMemory::host(8192, 4096).unwrap()).unwrap();
    card.read_c2h(0, &buf, 0, 4096, Duration::from_millis(10))
        .unwrap();
    let mut head = [0u8; 4];
    // SAFETY: no C2H into `buf` runs during the copy.
    #[allow(unsafe_code)]
    unsafe { buf.copy_to_host(0, &mut head) }.unwrap();
    assert_eq!(head, [0x5a; 4], "the back-end's copy landed");
    let kept = backend.regions.lock().unwrap()[0].clone();
    assert!(kept.access(|_| ()).is_some(), "live while pinned");
    let memory = buf.unpin().unwrap();
    assert!(
        kept.access(|m| m.write(0, &[0; 16])).is_none(),
        "released by the card after the back-end's unpin, before the memory is given back"
    );
    drop(memory);
}

#[test]
fn a_failed_pin_releases_the_region() {
    #[derive(Debug, Default)]
    struct Refuses(KeepsRegions);
    impl Backend for Refuses {
        fn status(&self) -> CardStatus {
            self.0.status()
        }
        fn pin(&self, region: Arc<PinnedRegion>) -> Result<Handle> {
            self.0.pin(region)?;
            Err(Error::ZeroLength { what: "pin" })
        }
        fn unpin(&self, h: Handle) -> Result<()> {
            self.0.unpin(h)
        }
        fn transfer(&self, req: &TransferRequest) -> Result<Transfer> {
            self.0.transfer(req)
        }
        fn host_read(&self, c: u32, a: u64, d: &mut [u8], t: Duration) -> Result<Transfer> {
            self.0.host_read(c, a, d, t)
        }
        fn host_write(&self, c: u32, a: u64, s: &[u8], t: Duration) -> Result<Transfer> {
            self.0.host_write(c, a, s, t)
        }
    }
    let backend = Arc::new(Refuses::default());
    let card = Card::from_backend(backend.clone());
    assert!(card.pin(DmaMemory::host(4096, 4096).unwrap()).is_err());
    let kept = backend.0.regions.lock().unwrap()[0].clone();
    assert!(
        kept.access(|_| ()).is_none(),
        "released before the memory dropped"
    );
}

#[test]
fn a_frame_read_without_the_check_says_unchecked_and_one_with_it_gets_the_slots_frame() {
    // KeepsRegions has no torn-frame check: the default answers Unchecked.
    let card = Card::from_backend(Arc::new(KeepsRegions::default()));
    let buf = card.pin(DmaMemory::host(8192, 4096).unwrap()).unwrap();
    let slot = FrameSlot {
        card_addr: 0x4000,
        len: 4096,
        seq: 0x1_0000_0007,
        epoch: 3,
        slot: 1,
        missed: 0,
        queue_overflow: 0,
        arrived: Instant::now(),
    };
    let r = card
        .read_frame(0, &buf, &slot, 4096, Duration::from_millis(10))
        .unwrap();
    assert_eq!((r.transfer.bytes, r.check), (4096, FrameCheck::Unchecked));

    /// A back-end whose check says torn, and remembers what it was asked.
    #[derive(Debug, Default)]
    struct Checks(KeepsRegions, Mutex<Vec<(TransferRequest, FrameRef)>>);
    impl Backend for Checks {
        fn status(&self) -> CardStatus {
            self.0.status()
        }
        fn pin(&self, region: Arc<PinnedRegion>) -> Result<Handle> {
            self.0.pin(region)
        }
        fn unpin(&self, h: Handle) -> Result<()> {
            self.0.unpin(h)
        }
        fn transfer(&self, _: &TransferRequest) -> Result<Transfer> {
            unreachable!("a frame read asks for the check")
        }
        fn transfer_frame(&self, req: &TransferRequest, frame: FrameRef) -> Result<FrameTransfer> {
            self.1.lock().unwrap().push((*req, frame));
            Ok(FrameTransfer {
                transfer: self.0.transfer(req)?,
                check: FrameCheck::Torn,
            })
        }
        fn host_read(&self, c: u32, a: u64, d: &mut [u8], t: Duration) -> Result<Transfer> {
            self.0.host_read(c, a, d, t)
        }
        fn host_write(&self, c: u32, a: u64, s: &[u8], t: Duration) -> Result<Transfer> {
            self.0.host_write(c, a, s, t)
        }
    }
    let backend = Arc::new(Checks::default());
    let card = Card::from_backend(backend.clone());
    let buf = card.pin(DmaMemory::host(8192, 4096).unwrap()).unwrap();
    let r = card
        .read_frame(0, &buf, &slot, 8192, Duration::from_millis(10))
        .unwrap();
    assert_eq!((r.transfer.bytes, r.check), (8192, FrameCheck::Torn));
    let asked = backend.1.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    let (req, frame) = asked[0];
    assert_eq!(
        (req.dir, req.card_addr, req.len, req.offset),
        (Direction::C2H, 0x4000, 8192, 0)
    );
    assert_eq!(
        frame,
        FrameRef {
            seq: 0x1_0000_0007,
            epoch: 3
        }
    );
    // The card's own rules first: nothing reaches the back-end.
    let e = card
        .read_frame(0, &buf, &slot, 16384, Duration::from_millis(10))
        .unwrap_err();
    assert_eq!(e.rule(), "buffer-bounds", "{e}");
    assert_eq!(backend.1.lock().unwrap().len(), 1);
}
