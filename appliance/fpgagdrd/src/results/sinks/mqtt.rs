//! MQTT publishing of every result (`outputs.mqtt`), with rumqttc.
//!
//! Owns: [`MqttSink`] (MQTT as an output of the results room: the publisher of the
//! settings in force) and [`Publisher`]: one client per configuration on its own thread (a
//! current-thread tokio runtime driving rumqttc's event loop), the bounded queue
//! (rumqttc's request channel, `outputs.mqtt.queue` long), reconnecting with back-off
//! ([`BACKOFF_MIN`] doubling up to [`BACKOFF_MAX`]), the retained status topic
//! (`online` after each CONNACK, `offline` as the last will and on a clean shutdown),
//! and [`MqttStatus`] (state, the last error in words, counters).
//! Must not: block its caller: [`Publisher::publish`] only ever tries to queue.
//!
//! QoS 0: a result published while the broker is away is dropped at once (counted as
//! `mqtt_offline`). QoS 1: it waits in the queue and goes out after the reconnect
//! (rumqttc sends the unacknowledged ones again, so a consumer can see duplicates);
//! when the queue is full it is dropped (`mqtt_queue_full`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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

#[derive(Debug, Default)]
struct Shared {
    connected: AtomicBool,
    connects: AtomicU64,
    queued: AtomicU64,
    delivered: AtomicU64,
    dropped_offline: AtomicU64,
    dropped_queue_full: AtomicU64,
    /// Status messages (`online`, QoS 1) queued: their acknowledgements and writes are
    /// not results, and are taken out of `delivered`.
    status_sent: AtomicU64,
    /// Alerts queued (on `alert_topic`): taken out of `delivered` like the status.
    alerts_queued: AtomicU64,
    alerts_dropped: AtomicU64,
    error: Mutex<Option<String>>,
    stop: AtomicBool,
    /// The settings cannot connect at all (the CA file): results are dropped at once.
    unusable: AtomicBool,
}

/// What became of a message handed to the client.
enum Queued {
    Yes,
    Offline,
    Full,
}

/// One configured MQTT client.
#[derive(Debug)]
pub struct Publisher {
    config: MqttConfig,
    qos: QoS,
    client: AsyncClient,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

/// MQTT as an output of the results room: the client of the settings in force
/// (`outputs.mqtt`), none while it is disabled.
#[derive(Debug)]
pub struct MqttSink {
    /// Where `outputs.mqtt.ca_file` may lie.
    roots: Roots,
    config: Mutex<MqttConfig>,
    publisher: Mutex<Option<Publisher>>,
}

impl MqttSink {
    /// Disabled until [`Sink::reconfigure`]; a CA file is confined to `roots`.
    pub fn new(roots: Roots) -> MqttSink {
        MqttSink {
            roots,
            config: Mutex::new(MqttConfig::default()),
            publisher: Mutex::new(None),
        }
    }
}

impl Sink for MqttSink {
    fn name(&self) -> &'static str {
        "mqtt"
    }

    fn result(&self, _: &ResultRecord, json: &Arc<str>) {
        if let Some(p) = self.publisher.lock().expect("mqtt poisoned").as_ref() {
            p.publish(json.clone());
        }
    }

    fn alert(&self, json: &Arc<str>) {
        if let Some(p) = self.publisher.lock().expect("mqtt poisoned").as_ref() {
            p.publish_alert(json);
        }
    }

    /// A changed setting replaces the client (the old one says `offline` on its status
    /// topic and disconnects); an unchanged one is left.
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
        if config.enabled {
            *publisher = Some(Publisher::start(config.clone(), &self.roots));
        }
        *current = config.clone();
    }

    fn status(&self, status: &mut OutputsStatus) {
        let mqtt = self
            .publisher
            .lock()
            .expect("mqtt poisoned")
            .as_ref()
            .map(Publisher::status)
            .unwrap_or_default();
        status.dropped.mqtt_offline = mqtt.dropped_offline;
        status.dropped.mqtt_queue_full = mqtt.dropped_queue_full;
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
    /// Starts a client for `config` (enabled) on its own thread; it connects, and
    /// reconnects with back-off, until [`Publisher::shut_down`]. With TLS, the thread
    /// first reads the CA file (confined to `roots`); when that fails, the status says
    /// why and every result is counted dropped (`mqtt_offline`).
    pub fn start(config: MqttConfig, roots: &Roots) -> Publisher {
        let shared = Arc::new(Shared::default());
        let qos = if config.qos == 0 {
            QoS::AtMostOnce
        } else {
            QoS::AtLeastOnce
        };
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
        // The queue: rumqttc's request channel (its `cap`), plus the status message.
        let (client, eventloop) = AsyncClient::new(options, config.queue + 1);
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
        let (c, s, cl, roots) = (
            config.clone(),
            shared.clone(),
            client.clone(),
            roots.clone(),
        );
        let spawned = std::thread::Builder::new()
            .name("fpgagdr-mqtt".into())
            .spawn(move || {
                let mut eventloop = eventloop;
                if c.tls {
                    // Read here, not on the caller's thread: the file system may be slow.
                    match tls(&c, &roots) {
                        Ok(t) => {
                            eventloop
                                .mqtt_options
                                .set_transport(Transport::tls_with_config(t));
                        }
                        Err(e) => {
                            // Nothing to connect with: say why, publish nothing.
                            tracing::warn!("MQTT: {e}");
                            *s.error.lock().expect("mqtt error poisoned") = Some(e);
                            s.unusable.store(true, Ordering::Release);
                            return;
                        }
                    }
                }
                match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt.block_on(drive(c, s, cl, eventloop, stop_rx)),
                    Err(e) => tracing::error!("MQTT: no runtime: {e}"),
                }
            });
        if let Err(e) = spawned {
            *shared.error.lock().expect("mqtt error poisoned") =
                Some(format!("cannot start the MQTT thread: {e}"));
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
            qos,
            client,
            shared,
            stop: Some(stop_tx),
        }
    }

    /// Queues one result's JSON, or counts it dropped: broker away at QoS 0, queue full.
    pub fn publish(&self, json: Arc<str>) {
        let s = &self.shared;
        match self.try_queue(&self.config.topic, &json) {
            Queued::Yes => s.queued.fetch_add(1, Ordering::Relaxed),
            Queued::Offline => s.dropped_offline.fetch_add(1, Ordering::Relaxed),
            Queued::Full => s.dropped_queue_full.fetch_add(1, Ordering::Relaxed),
        };
    }

    /// Queues one alert's JSON on `outputs.mqtt.alert_topic` (the results' QoS), or
    /// counts it dropped (`alerts_dropped`): broker away at QoS 0, queue full.
    pub fn publish_alert(&self, json: &str) {
        let s = &self.shared;
        match self.try_queue(&self.config.alert_topic, json) {
            Queued::Yes => s.alerts_queued.fetch_add(1, Ordering::Relaxed),
            Queued::Offline | Queued::Full => s.alerts_dropped.fetch_add(1, Ordering::Relaxed),
        };
    }

    fn try_queue(&self, topic: &str, json: &str) -> Queued {
        let s = &self.shared;
        if s.unusable.load(Ordering::Acquire)
            || (self.qos == QoS::AtMostOnce && !s.connected.load(Ordering::Acquire))
        {
            return Queued::Offline;
        }
        match self
            .client
            .try_publish(topic, self.qos, false, json.as_bytes().to_vec())
        {
            Ok(()) => Queued::Yes,
            Err(_) => Queued::Full,
        }
    }

    /// Says `offline` on the status topic, disconnects and ends the client's thread
    /// (without waiting for it).
    pub fn shut_down(mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    /// The client's state now.
    pub fn status(&self) -> MqttStatus {
        let s = &self.shared;
        let error = s.error.lock().expect("mqtt error poisoned").clone();
        let connected = s.connected.load(Ordering::Acquire);
        MqttStatus {
            enabled: true,
            state: if connected {
                "connected"
            } else if error.is_some() {
                "error"
            } else {
                "connecting"
            }
            .into(),
            broker: format!("{}:{}", self.config.host, self.config.port),
            topic: self.config.topic.clone(),
            qos: self.config.qos,
            last_error: error,
            connects: s.connects.load(Ordering::Relaxed),
            queued: s.queued.load(Ordering::Relaxed),
            delivered: s
                .delivered
                .load(Ordering::Relaxed)
                .saturating_sub(s.status_sent.load(Ordering::Relaxed))
                .saturating_sub(s.alerts_queued.load(Ordering::Relaxed)),
            dropped_offline: s.dropped_offline.load(Ordering::Relaxed),
            dropped_queue_full: s.dropped_queue_full.load(Ordering::Relaxed),
            alerts_queued: s.alerts_queued.load(Ordering::Relaxed),
            alerts_dropped: s.alerts_dropped.load(Ordering::Relaxed),
        }
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Holds what waits for a reconnect within the queue's bound: after a failure rumqttc
/// moves its channel's requests (and the unacknowledged publishes) into its own
/// `pending` list, which would otherwise grow by a queue's worth at every attempt.
/// The oldest results go first (counted as `mqtt_queue_full`); the status message stays.
fn bound_pending(eventloop: &mut rumqttc::EventLoop, config: &MqttConfig, shared: &Shared) {
    let results =
        |r: &rumqttc::Request| matches!(r, rumqttc::Request::Publish(p) if p.topic == config.topic);
    let mut over = eventloop
        .pending
        .iter()
        .filter(|r| results(r))
        .count()
        .saturating_sub(config.queue);
    if over == 0 {
        return;
    }
    shared
        .dropped_queue_full
        .fetch_add(over as u64, Ordering::Relaxed);
    eventloop.pending.retain(|r| {
        if over > 0 && results(r) {
            over -= 1;
            false
        } else {
            true
        }
    });
}

/// The client's event loop: poll (which connects and reconnects), mark the state,
/// count deliveries, back off after a failure; on stop, `offline` and DISCONNECT.
async fn drive(
    config: MqttConfig,
    shared: Arc<Shared>,
    client: AsyncClient,
    mut eventloop: rumqttc::EventLoop,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) {
    let mut backoff = BACKOFF_MIN;
    let qos1 = config.qos == 1;
    loop {
        let event = tokio::select! {
            e = eventloop.poll() => e,
            _ = &mut stop => break,
        };
        match event {
            Ok(Event::Incoming(Packet::ConnAck(_))) => {
                backoff = BACKOFF_MIN;
                shared.connected.store(true, Ordering::Release);
                shared.connects.fetch_add(1, Ordering::Relaxed);
                *shared.error.lock().expect("mqtt error poisoned") = None;
                tracing::info!("MQTT: connected to {}:{}", config.host, config.port);
                // The retained status: online (the last will says offline).
                if client
                    .try_publish(
                        config.status_topic.as_str(),
                        QoS::AtLeastOnce,
                        true,
                        "online",
                    )
                    .is_ok()
                {
                    shared.status_sent.fetch_add(1, Ordering::Relaxed);
                }
            }
            Ok(Event::Incoming(Packet::PubAck(_))) if qos1 => {
                shared.delivered.fetch_add(1, Ordering::Relaxed);
            }
            Ok(Event::Outgoing(Outgoing::Publish(_))) if !qos1 => {
                shared.delivered.fetch_add(1, Ordering::Relaxed);
            }
            Ok(_) => {}
            Err(e) => {
                let was = shared.connected.swap(false, Ordering::AcqRel);
                let why = explain(&config, &e);
                if was {
                    tracing::warn!("MQTT: connection lost: {why}");
                } else {
                    tracing::debug!("MQTT: {why}");
                }
                *shared.error.lock().expect("mqtt error poisoned") = Some(why);
                bound_pending(&mut eventloop, &config, &shared);
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
    if shared.connected.load(Ordering::Acquire) {
        let _ = client.try_publish(
            config.status_topic.as_str(),
            QoS::AtLeastOnce,
            true,
            "offline",
        );
        let _ = client.try_disconnect();
        let _ = tokio::time::timeout(Duration::from_secs(2), async {
            loop {
                match eventloop.poll().await {
                    Ok(Event::Outgoing(Outgoing::Disconnect)) | Err(_) => break,
                    Ok(_) => {}
                }
            }
        })
        .await;
    }
    shared.connected.store(false, Ordering::Release);
}
