//! The live stream's fan-out: what one event costs per open stream, from
//! the board's channel to the bytes the HTTP connection is handed, in the way
//! `api/live.rs` sends it (each stream sends the SSE bytes the board rendered once)
//! against the way it did before (each stream built an `axum::response::sse::Event` of
//! the same JSON: event name, id formatted, data copied and scanned for line breaks).
//! A benchmark, not a test: it prints figures and checks only that both ways send the
//! same bytes.
//!
//! ```sh
//! cargo bench -p fpgagdrd --bench sse_fanout -- [--streams 1000] [--events 30] [--bytes 3000] [--rounds 10]
//! ```
//!
//! `--streams` bodies subscribe to one broadcast channel; `--events` events of `--bytes`
//! of JSON data are sent; then every body is drained on a current-thread runtime (one
//! core, as one HTTP worker). Rounds alternate the two ways (paired, interleaved, so a
//! change of the machine's load shows in both); it prints each way's median and
//! spread of nanoseconds per stream and event. Sockets, hyper and the kernel are not
//! in it (`conn_load` measures the whole service).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::response::IntoResponse;
use axum::response::sse::{Event as AxumEvent, Sse};
use fpgagdrd::board::Event;
use http_body_util::BodyExt;
use tokio::sync::broadcast;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::BroadcastStream;

/// The bench's flags (`cargo bench -p fpgagdrd --bench sse_fanout -- --flag V`).
#[derive(clap::Parser)]
struct Args {
    /// Streams subscribed to the events.
    #[arg(long, default_value_t = 1000)]
    streams: usize,
    /// Events sent per round.
    #[arg(long, default_value_t = 30)]
    events: usize,
    /// Bytes per event's JSON.
    #[arg(long, default_value_t = 3000)]
    bytes: usize,
    /// Rounds timed.
    #[arg(long, default_value_t = 10)]
    rounds: usize,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

fn args() -> Args {
    <Args as clap::Parser>::parse()
}

/// A `{"batch": [...]}` of about `bytes` bytes, shaped like the board's (numbers and
/// short strings, one line).
fn event_json(bytes: usize, seq: u64) -> Arc<str> {
    let mut s = String::from("{\"batch\":[");
    let mut i = 0u64;
    while s.len() + 80 < bytes {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&format!(
            "{{\"t\":{}.{:03},\"fps\":30.007746,\"state\":\"running\",\"seq\":{}}}",
            1_700_000_000 + seq,
            i,
            seq * 3 + i
        ));
        i += 1;
    }
    s.push_str("]}");
    s.into()
}

#[derive(Clone, Copy, Debug)]
enum Way {
    /// Each stream builds an axum SSE `Event` (before).
    PerStream,
    /// Each stream sends the board's bytes (now).
    Shared,
}

fn body(way: Way, rx: broadcast::Receiver<Event>) -> Body {
    let events = BroadcastStream::new(rx).filter_map(|e| e.ok());
    match way {
        Way::PerStream => Sse::new(events.map(|b| {
            Ok::<_, Infallible>(
                AxumEvent::default()
                    .event("snapshot")
                    .id(b.id.to_string())
                    .data(&*b.json),
            )
        }))
        .into_response()
        .into_body(),
        Way::Shared => Body::from_stream(events.map(|b| Ok::<_, Infallible>(b.sse))),
    }
}

/// Sends `events` to `streams` bodies of `way` and drains them: elapsed time, and the
/// bytes of the first body.
async fn round(way: Way, a: &Args) -> (Duration, Vec<u8>) {
    let (tx, _) = broadcast::channel(a.events.max(16));
    let mut bodies: Vec<Body> = (0..a.streams).map(|_| body(way, tx.subscribe())).collect();
    for seq in 0..a.events as u64 {
        tx.send(Event::new(
            1_700_000_000_000 + seq,
            event_json(a.bytes, seq),
        ))
        .expect("subscribers");
    }
    drop(tx);
    let mut first = Vec::new();
    let start = Instant::now();
    for (i, b) in bodies.iter_mut().enumerate() {
        while let Some(frame) = b.frame().await {
            let data = frame.expect("infallible").into_data().unwrap_or_default();
            if i == 0 {
                first.extend_from_slice(&data);
            }
            std::hint::black_box(&data);
        }
    }
    (start.elapsed(), first)
}

fn main() {
    let a = args();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let per = (a.streams * a.events) as f64;
    let mut ns = [Vec::new(), Vec::new()];
    let (_, before) = rt.block_on(round(Way::PerStream, &a));
    let (_, now) = rt.block_on(round(Way::Shared, &a));
    assert_eq!(
        String::from_utf8_lossy(&before),
        String::from_utf8_lossy(&now),
        "both ways send the same bytes"
    );
    for r in 0..a.rounds {
        // Alternate which goes first.
        let order = if r % 2 == 0 {
            [Way::PerStream, Way::Shared]
        } else {
            [Way::Shared, Way::PerStream]
        };
        for way in order {
            let (t, _) = rt.block_on(round(way, &a));
            ns[way as usize].push(t.as_nanos() as f64 / per);
        }
    }
    println!(
        "{} streams x {} events of {} bytes of JSON ({} bytes on the wire each), {} rounds:",
        a.streams,
        a.events,
        a.bytes,
        now.len() / a.events.max(1),
        a.rounds
    );
    for v in ns.iter_mut() {
        v.sort_by(f64::total_cmp);
    }
    for (way, v) in [(Way::PerStream, &ns[0]), (Way::Shared, &ns[1])] {
        println!(
            "  {way:?}: median {:.0} ns per stream and event (min {:.0}, max {:.0})",
            v[v.len() / 2],
            v[0],
            v[v.len() - 1]
        );
    }
    let ratio = ns[0][ns[0].len() / 2] / ns[1][ns[1].len() / 2];
    println!("  per-stream work, before / now: {ratio:.1}x");
}
