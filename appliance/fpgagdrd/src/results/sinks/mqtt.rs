//! MQTT publishing of every result (`outputs.mqtt`), with rumqttc.
//!
//! Owns: [`MqttSink`] (MQTT as an output of the results room), its queue and counters
//! (both live as long as the service: a settings change neither empties the queue nor
//! resets a counter), and [`Publisher`]: one client per configuration on its own
//! thread (a current-thread tokio runtime driving rumqttc's event loop), reconnecting
//! with back-off ([`BACKOFF_MIN`] doubling up to [`BACKOFF_MAX`]), the retained status
//! topic (`online` after each CONNACK, `offline` as the last will and on a clean
//! shutdown), and [`MqttStatus`] (state, the last error in words, queue depth, counters).
//! Must not: block its caller: [`Sink::result`] only ever appends to the queue.
//!
//! The queue (`Outbox`): results and alerts wait in `waiting` until the client is
//! connected and has room, then move to `sent` as they are handed to rumqttc, in the
//! order rumqttc writes them. An item leaves `sent` when it is delivered: written (QoS
//! 0) or acknowledged (QoS 1; MQTT 3.1.1 section 4.6: a broker acknowledges QoS 1
//! publishes in the order it received them, so the oldest in `sent` is always the one
//! acknowledged). When the connection breaks, what was sent and not acknowledged goes
//! back to the front of `waiting` (rumqttc's own copies are dropped: with a clean
//! session it would discard them at the reconnect, uncounted) and is sent again after
//! the reconnect, so a consumer can see a result twice. A settings change replaces the
//! client, not the queue: the new client sends what the old one had not delivered.
//! Every result leaves the queue delivered or counted by reason: `mqtt_offline` (QoS 0
//! while the broker is away; settings that cannot connect at all), `mqtt_queue_full`,
//! `mqtt_disabled` (MQTT turned off while results waited).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rumqttc::{
    AsyncClient, ConnectReturnCode, ConnectionError, Event, LastWill, MqttOptions, Outgoing,
    Packet, QoS, TlsConfiguration, Transport,
};

use super::super::record::ResultRecord;
use super::super::{MqttStatus, OutputsStatus, Sink};
use crate::config::{MqttConfig, OutputsConfig};
use crate::files::{self, Kind, Roots};

/// First wait before reconnecting after a failure.
pub const BACKOFF_MIN: Duration = Duration::from_millis(250);
/// Longest wait between two connection attempts.
pub const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// Requests rumqttc's channel holds (the queue itself is [`Outbox`]): the client is
/// handed items only while it is connected and this has room.
const CHANNEL: usize = 64;

/// What an item of the queue is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum What {
    /// A result (on `outputs.mqtt.topic`).
    Result,
    /// An alert (on `outputs.mqtt.alert_topic`).
    Alert,
    /// The retained status (`online`, `offline`; QoS 1): only in `sent`, never resent.
    Status,
}

#[derive(Debug, Clone)]
struct Item {
    what: What,
    json: Arc<str>,
}

/// Counters since the service started.
#[derive(Debug, Default)]
struct Counters {
    connects: AtomicU64,
    queued: AtomicU64,
    delivered: AtomicU64,
    dropped_offline: AtomicU64,
    dropped_queue_full: AtomicU64,
    dropped_disabled: AtomicU64,
    alerts_queued: AtomicU64,
    alerts_delivered: AtomicU64,
    alerts_dropped: AtomicU64,
}

impl Counters {
    fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }
}

/// The queue and the state of the client in force, under one lock.
#[derive(Debug, Default)]
struct Queue {
    /// Not yet handed to a client, oldest first.
    waiting: VecDeque<Item>,
    /// Handed to the client in force and not yet delivered, in the order it writes them.
    sent: VecDeque<Item>,
    /// Results in `waiting` and `sent` (the queue's depth).
    results: usize,
    /// Alerts in `waiting` and `sent`.
    alerts: usize,
    /// The client in force; a replaced client's late events change nothing.
    generation: u64,
    /// Whether the settings in force have MQTT on.
    enabled: bool,
    /// Whether they publish at QoS 0.
    qos0: bool,
    /// `outputs.mqtt.queue`.
    cap: usize,
    /// The client in force is connected.
    connected: bool,
    /// The settings in force cannot connect at all (the CA file).
    unusable: bool,
    /// The last connection error, in words (cleared by a CONNACK).
    error: Option<String>,
}

impl Queue {
    fn forget(&mut self, item: &Item) {
        match item.what {
            What::Result => self.results -= 1,
            What::Alert => self.alerts -= 1,
            What::Status => {}
        }
    }

    /// Empties the queue, counting every result with `results` and every alert as
    /// dropped.
    fn discard(&mut self, counters: &Counters, results: &AtomicU64) {
        for item in self.sent.drain(..).chain(self.waiting.drain(..)) {
            match item.what {
                What::Result => Counters::add(results, 1),
                What::Alert => Counters::add(&counters.alerts_dropped, 1),
                What::Status => {}
            }
        }
        self.results = 0;
        self.alerts = 0;
    }

    /// What was handed to the client and not delivered goes back to the front of
    /// `waiting`, in its order (the status messages are not sent again).
    fn requeue_sent(&mut self) {
        while let Some(item) = self.sent.pop_back() {
            if item.what != What::Status {
                self.waiting.push_front(item);
            }
        }
    }

    /// The oldest item of `sent` was delivered.
    fn delivered(&mut self, counters: &Counters) {
        if let Some(item) = self.sent.pop_front() {
            self.forget(&item);
            match item.what {
                What::Result => Counters::add(&counters.delivered, 1),
                What::Alert => Counters::add(&counters.alerts_delivered, 1),
                What::Status => {}
            }
        }
    }
}

/// The queue, its counters, and the wake-up of the client in force.
#[derive(Debug, Default)]
struct Outbox {
    queue: Mutex<Queue>,
    counters: Counters,
    wake: tokio::sync::Notify,
}

impl Outbox {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().expect("mqtt queue poisoned")
    }

    /// Queues a result or an alert, or counts it dropped. Never waits but for the lock.
    fn offer(&self, what: What, json: &Arc<str>) {
        let c = &self.counters;
        let mut q = self.lock();
        if !q.enabled {
            return;
        }
        let (queued, offline, full) = match what {
            What::Result => (&c.queued, &c.dropped_offline, &c.dropped_queue_full),
            _ => (&c.alerts_queued, &c.alerts_dropped, &c.alerts_dropped),
        };
        if q.unusable || (q.qos0 && !q.connected) {
            Counters::add(offline, 1);
            return;
        }
        let held = if what == What::Result {
            q.results
        } else {
            q.alerts
        };
        if held >= q.cap {
            Counters::add(full, 1);
            return;
        }
        q.waiting.push_back(Item {
            what,
            json: json.clone(),
        });
        match what {
            What::Result => q.results += 1,
            _ => q.alerts += 1,
        }
        drop(q);
        Counters::add(queued, 1);
        self.wake.notify_one();
    }
}

/// One configured MQTT client (its thread runs until [`Publisher::shut_down`] or drop).
#[derive(Debug)]
pub struct Publisher {
    config: MqttConfig,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

/// MQTT as an output of the results room: the queue and counters (for the service's
/// life), and the client of the settings in force (`outputs.mqtt`), none while it is
/// disabled.
#[derive(Debug)]
pub struct MqttSink {
    /// Where `outputs.mqtt.ca_file` may lie.
    roots: Roots,
    config: Mutex<MqttConfig>,
    publisher: Mutex<Option<Publisher>>,
    out: Arc<Outbox>,
}

impl MqttSink {
    /// Disabled until [`Sink::reconfigure`]; a CA file is confined to `roots`.
    pub fn new(roots: Roots) -> MqttSink {
        MqttSink {
            roots,
            config: Mutex::new(MqttConfig::default()),
            publisher: Mutex::new(None),
            out: Arc::default(),
        }
    }
}

impl Sink for MqttSink {
    fn name(&self) -> &'static str {
        "mqtt"
    }

    fn result(&self, _: &ResultRecord, json: &Arc<str>) {
        self.out.offer(What::Result, json);
    }

    fn alert(&self, json: &Arc<str>) {
        self.out.offer(What::Alert, json);
    }

    /// A changed setting replaces the client (the old one says `offline` on its status
    /// topic and disconnects), never the queue: what waited for the old client goes to
    /// the new one; turning MQTT off drops it, counted (`mqtt_disabled`); a shorter
    /// queue drops its newest results, counted (`mqtt_queue_full`). An unchanged
    /// setting is left as it is.
    fn reconfigure(&self, outputs: &OutputsConfig) {
        let config = &outputs.mqtt;
        let mut current = self.config.lock().expect("mqtt config poisoned");
        let mut publisher = self.publisher.lock().expect("mqtt poisoned");
        if *current == *config && (publisher.is_some() || !config.enabled) {
            return;
        }
        if let Some(old) = publisher.take() {
            old.shut_down();
        }
        let generation = {
            let c = &self.out.counters;
            let mut q = self.out.lock();
            q.generation += 1;
            if q.qos0 {
                // Handed to a connected client at QoS 0: written or about to be (the old
                // client writes what it holds before it disconnects).
                while !q.sent.is_empty() {
                    q.delivered(c);
                }
            } else {
                q.requeue_sent();
            }
            q.enabled = config.enabled;
            q.qos0 = config.qos == 0;
            q.cap = config.queue;
            q.connected = false;
            q.unusable = false;
            q.error = None;
            if !config.enabled {
                q.discard(c, &c.dropped_disabled);
            }
            while q.results > q.cap {
                let i = q
                    .waiting
                    .iter()
                    .rposition(|i| i.what == What::Result)
                    .expect("results wait");
                q.waiting.remove(i);
                q.results -= 1;
                Counters::add(&c.dropped_queue_full, 1);
            }
            q.generation
        };
        if config.enabled {
            *publisher = Some(Publisher::start(
                config.clone(),
                &self.roots,
                self.out.clone(),
                generation,
            ));
        }
        *current = config.clone();
    }

    fn status(&self, status: &mut OutputsStatus) {
        let config = self.config.lock().expect("mqtt config poisoned").clone();
        let c = &self.out.counters;
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let q = self.out.lock();
        let state = if !q.enabled {
            "disabled"
        } else if q.connected {
            "connected"
        } else if q.error.is_some() {
            "error"
        } else {
            "connecting"
        };
        let mqtt = MqttStatus {
            enabled: q.enabled,
            state: state.into(),
            broker: if q.enabled {
                format!("{}:{}", config.host, config.port)
            } else {
                String::new()
            },
            topic: if q.enabled {
                config.topic.clone()
            } else {
                String::new()
            },
            qos: config.qos,
            last_error: q.error.clone(),
            connects: n(&c.connects),
            queue_depth: q.results as u64,
            queue_max: if q.enabled { q.cap as u64 } else { 0 },
            queued_total: n(&c.queued),
            queued: n(&c.queued),
            delivered: n(&c.delivered),
            dropped_offline: n(&c.dropped_offline),
            dropped_queue_full: n(&c.dropped_queue_full),
            dropped_disabled: n(&c.dropped_disabled),
            alerts_queued: n(&c.alerts_queued),
            alerts_delivered: n(&c.alerts_delivered),
            alerts_dropped: n(&c.alerts_dropped),
        };
        drop(q);
        status.dropped.mqtt_offline = mqtt.dropped_offline;
        status.dropped.mqtt_queue_full = mqtt.dropped_queue_full;
        status.dropped.mqtt_disabled = mqtt.dropped_disabled;
        status.mqtt = mqtt;
    }
}

/// The client id `outputs.mqtt.client_id` names, or `fpgagdr-<host name>`.
fn client_id(c: &MqttConfig) -> String {
    if !c.client_id.is_empty() {
        return c.client_id.clone();
    }
    let host = nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "appliance".into());
    format!("fpgagdr-{host}")
}

/// rustls with ring, trusting `ca_file`'s certificates or the system's store. The CA
/// file is confined to `roots` (the data directory or a `--cert-root`) and read as a
/// regular file of at most [`files::MAX_CA_BYTES`]. Errors name their rule
/// (`path-confined`, `file-missing`, `file-type`, `file-size`, `mqtt-tls`).
fn tls(c: &MqttConfig, roots: &Roots) -> Result<TlsConfiguration, String> {
    let roots = trusted(c, roots)?;
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| format!("rule mqtt-tls: {e}"))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(TlsConfiguration::Rustls(Arc::new(config)))
}

/// The certificates `outputs.mqtt.ca_file` holds (confined, read, parsed), or the
/// system's store when it is null.
fn trusted(c: &MqttConfig, roots: &Roots) -> Result<rustls::RootCertStore, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut store = rustls::RootCertStore::empty();
    match &c.ca_file {
        Some(given) => {
            let file = roots
                .confine(given, Kind::Cert)
                .map_err(|e| format!("outputs.mqtt.ca_file: {e}"))?;
            let pem = files::read_regular(&file, files::MAX_CA_BYTES, "a CA file")
                .map_err(|e| format!("outputs.mqtt.ca_file: {e}"))?;
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem)
                .collect::<Result<_, _>>()
                .map_err(|e| {
                    format!(
                        "rule mqtt-tls: outputs.mqtt.ca_file {} is not PEM: {e}",
                        file.shown
                    )
                })?;
            let (added, _) = store.add_parsable_certificates(certs);
            if added == 0 {
                return Err(format!(
                    "rule mqtt-tls: outputs.mqtt.ca_file {} holds no usable certificate",
                    file.shown
                ));
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            store.add_parsable_certificates(found.certs);
            if store.is_empty() {
                return Err(
                    "rule mqtt-tls: the system's CA store is empty; set outputs.mqtt.ca_file"
                        .into(),
                );
            }
        }
    }
    Ok(store)
}

/// Checks what only reading can check of `config` before it is applied: with TLS on,
/// its CA file lies where CA files may (`roots`), is a regular PEM file within
/// [`files::MAX_CA_BYTES`] and holds at least one certificate. Blocks on the file
/// system: call it off the async threads. Errors: the rule broken, in words.
pub fn check_tls(config: &MqttConfig, roots: &Roots) -> Result<(), String> {
    if config.enabled && config.tls && config.ca_file.is_some() {
        trusted(config, roots)?;
    }
    Ok(())
}

/// A connection error in words, naming the rule where the broker refused us.
fn explain(c: &MqttConfig, e: &ConnectionError) -> String {
    let broker = format!("{}:{}", c.host, c.port);
    match e {
        ConnectionError::ConnectionRefused(ConnectReturnCode::BadUserNamePassword) => format!(
            "rule mqtt-auth: the broker {broker} refused the user name or password \
             (CONNACK: bad user name or password); check outputs.mqtt.username and password"
        ),
        ConnectionError::ConnectionRefused(ConnectReturnCode::NotAuthorized) => format!(
            "rule mqtt-auth: the broker {broker} refused this client (CONNACK: not authorized: \
             a wrong user name or password, or no permission); check outputs.mqtt.username and password"
        ),
        ConnectionError::ConnectionRefused(code) => {
            format!("the broker {broker} refused the connection (CONNACK: {code:?})")
        }
        ConnectionError::Io(io) => format!("cannot reach the broker {broker}: {io}"),
        ConnectionError::Tls(t) => format!("rule mqtt-tls: TLS with {broker}: {t}"),
        other => format!("broker {broker}: {other}"),
    }
}

impl Publisher {
    /// Starts a client for `config` (enabled) on its own thread, taking items from
    /// `out` while it is the client of `generation`; it connects, and reconnects with
    /// back-off, until [`Publisher::shut_down`]. With TLS, the thread first reads the CA
    /// file (confined to `roots`); when that fails, the status says why and every result
    /// is counted dropped (`mqtt_offline`).
    fn start(config: MqttConfig, roots: &Roots, out: Arc<Outbox>, generation: u64) -> Publisher {
        let mut options = MqttOptions::new(client_id(&config), config.host.clone(), config.port);
        options
            .set_keep_alive(Duration::from_secs(config.keep_alive_s))
            .set_clean_session(true)
            .set_last_will(LastWill::new(
                config.status_topic.clone(),
                "offline",
                QoS::AtLeastOnce,
                true,
            ))
            // Results are a few hundred bytes; leave room for long labels.
            .set_max_packet_size(64 * 1024, 64 * 1024);
        if let Some(user) = &config.username {
            options.set_credentials(user.clone(), config.password.clone().unwrap_or_default());
        }
        let (client, eventloop) = AsyncClient::new(options, CHANNEL);
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
        let (c, roots, o) = (config.clone(), roots.clone(), out.clone());
        let spawned = std::thread::Builder::new()
            .name("fpgagdr-mqtt".into())
            .spawn(move || {
                let mut eventloop = eventloop;
                let client = Client {
                    config: c,
                    out: o,
                    generation,
                    client,
                };
                if client.config.tls {
                    // Read here, not on the caller's thread: the file system may be slow.
                    match tls(&client.config, &roots) {
                        Ok(t) => {
                            eventloop
                                .mqtt_options
                                .set_transport(Transport::tls_with_config(t));
                        }
                        Err(e) => {
                            // Nothing to connect with: say why, publish nothing.
                            tracing::warn!("MQTT: {e}");
                            client.unusable(e);
                            return;
                        }
                    }
                }
                match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt.block_on(client.drive(eventloop, stop_rx)),
                    Err(e) => tracing::error!("MQTT: no runtime: {e}"),
                }
            });
        if let Err(e) = spawned {
            let mut q = out.lock();
            if q.generation == generation {
                q.error = Some(format!("cannot start the MQTT thread: {e}"));
            }
        }
        tracing::info!(
            "MQTT: publishing results to {}:{} topic {} (QoS {}, queue {})",
            config.host,
            config.port,
            config.topic,
            config.qos,
            config.queue
        );
        Publisher {
            config,
            stop: Some(stop_tx),
        }
    }

    /// Says `offline` on the status topic, disconnects and ends the client's thread
    /// (without waiting for it).
    pub fn shut_down(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    /// The settings this client runs with.
    pub fn config(&self) -> &MqttConfig {
        &self.config
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The client's side of the queue, on its own thread.
struct Client {
    config: MqttConfig,
    out: Arc<Outbox>,
    generation: u64,
    client: AsyncClient,
}

impl Client {
    /// The queue, when this is still the client in force.
    fn queue(&self) -> Option<std::sync::MutexGuard<'_, Queue>> {
        let q = self.out.lock();
        (q.generation == self.generation).then_some(q)
    }

    /// These settings cannot connect (the CA file): say why, and count what waits and
    /// what comes as dropped (`mqtt_offline`).
    fn unusable(&self, why: String) {
        let c = &self.out.counters;
        if let Some(mut q) = self.queue() {
            q.error = Some(why);
            q.unusable = true;
            q.discard(c, &c.dropped_offline);
        }
    }

    fn qos(&self) -> QoS {
        if self.config.qos == 0 {
            QoS::AtMostOnce
        } else {
            QoS::AtLeastOnce
        }
    }

    /// Hands waiting items to rumqttc while it has room (only while connected: a
    /// client that is away holds nothing of the queue).
    fn feed(&self) {
        let Some(mut q) = self.queue() else {
            return;
        };
        if !q.connected {
            return;
        }
        while let Some(item) = q.waiting.front() {
            let topic = match item.what {
                What::Alert => &self.config.alert_topic,
                _ => &self.config.topic,
            };
            let sent =
                self.client
                    .try_publish(topic, self.qos(), false, item.json.as_bytes().to_vec());
            if sent.is_err() {
                break; // rumqttc's channel is full: the next event makes room
            }
            let item = q.waiting.pop_front().expect("an item");
            q.sent.push_back(item);
        }
    }

    /// Publishes the retained status (`online`, `offline`), QoS 1; while this is the
    /// client in force it takes its place in `sent`, in the order rumqttc writes it.
    fn status(&self, text: &'static str) {
        let q = self.queue();
        let sent = self
            .client
            .try_publish(
                self.config.status_topic.as_str(),
                QoS::AtLeastOnce,
                true,
                text,
            )
            .is_ok();
        if let Some(mut q) = q
            && sent
        {
            q.sent.push_back(Item {
                what: What::Status,
                json: Arc::from(text),
            });
        }
    }

    /// Accounts for one event of the event loop: deliveries, CONNACK.
    fn event(&self, event: &Event) {
        let c = &self.out.counters;
        match event {
            Event::Incoming(Packet::ConnAck(_)) => {
                if let Some(mut q) = self.queue() {
                    q.connected = true;
                    q.error = None;
                }
                Counters::add(&c.connects, 1);
                tracing::info!(
                    "MQTT: connected to {}:{}",
                    self.config.host,
                    self.config.port
                );
                // The retained status: online (the last will says offline).
                self.status("online");
            }
            // QoS 1: the oldest item sent is the one acknowledged.
            Event::Incoming(Packet::PubAck(_)) if self.config.qos == 1 => {
                if let Some(mut q) = self.queue() {
                    q.delivered(c);
                }
            }
            // QoS 0: delivered when written (the status messages, QoS 1, are written in
            // the same order and leave `sent` the same way).
            Event::Outgoing(Outgoing::Publish(_)) if self.config.qos == 0 => {
                if let Some(mut q) = self.queue() {
                    q.delivered(c);
                }
            }
            _ => {}
        }
    }

    /// The connection broke: what was sent and not delivered waits again (QoS 1; at
    /// QoS 0 the waiting results are dropped, counted `mqtt_offline`), rumqttc's own
    /// copies are dropped (we send again ourselves).
    fn lost(&self, eventloop: &mut rumqttc::EventLoop, why: String) {
        eventloop.pending.clear();
        let c = &self.out.counters;
        if let Some(mut q) = self.queue() {
            let was = std::mem::replace(&mut q.connected, false);
            if was {
                tracing::warn!("MQTT: connection lost: {why}");
            } else {
                tracing::debug!("MQTT: {why}");
            }
            q.error = Some(why);
            q.requeue_sent();
            if q.qos0 {
                q.discard(c, &c.dropped_offline);
            }
        }
    }

    /// The client's event loop: poll (which connects and reconnects), hand it waiting
    /// items, count deliveries, back off after a failure; on stop, `offline` and
    /// DISCONNECT.
    async fn drive(
        self,
        mut eventloop: rumqttc::EventLoop,
        mut stop: tokio::sync::oneshot::Receiver<()>,
    ) {
        let mut backoff = BACKOFF_MIN;
        let mut connected = false;
        loop {
            self.feed();
            let event = tokio::select! {
                e = eventloop.poll() => e,
                _ = self.out.wake.notified() => continue,
                _ = &mut stop => break,
            };
            match event {
                Ok(e) => {
                    if matches!(e, Event::Incoming(Packet::ConnAck(_))) {
                        backoff = BACKOFF_MIN;
                        connected = true;
                    }
                    self.event(&e);
                }
                Err(e) => {
                    connected = false;
                    self.lost(&mut eventloop, explain(&self.config, &e));
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        _ = &mut stop => break,
                    }
                    backoff = (backoff * 2).min(BACKOFF_MAX);
                }
            }
        }
        // A clean goodbye: the status says offline (retained), then DISCONNECT (which
        // cancels the last will). Bounded: a broker that is away gets neither.
        if connected {
            self.status("offline");
            let _ = self.client.try_disconnect();
            let _ = tokio::time::timeout(Duration::from_secs(2), async {
                loop {
                    match eventloop.poll().await {
                        Ok(Event::Outgoing(Outgoing::Disconnect)) | Err(_) => break,
                        Ok(e) => self.event(&e),
                    }
                }
            })
            .await;
        }
        if let Some(mut q) = self.queue() {
            q.connected = false;
        }
    }
}
