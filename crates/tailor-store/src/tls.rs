//! TLS for clients (rustls, `ring` provider): the node's config turned into a
//! [`TlsAcceptor`], and a handshake bounded in time.
//!
//! Loading happens once at start-up, so a missing file, a PEM without a certificate or a key
//! that does not belong to the certificate stops the node with an error naming the config field
//! and the file, instead of failing every handshake later. After the handshake a TLS client is
//! served by the same connection code as a plain one ([`crate::client_conn`]), under the same
//! limits; rustls's own buffers are bounded per connection by rustls.

use crate::config::{ConfigError, NodeConfig};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_rustls::rustls::crypto::{ring, CryptoProvider};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::danger::ClientCertVerifier;
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{RootCertStore, ServerConfig};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

/// A client connection once its TLS handshake is done.
pub type ClientStream = TlsStream<TcpStream>;

/// The acceptor for `tls_addr`, or `None` when TLS is off.
pub fn acceptor(cfg: &NodeConfig) -> Result<Option<TlsAcceptor>, ConfigError> {
    if cfg.tls_addr.is_none() {
        return Ok(None);
    }
    let cert_file = required(&cfg.tls_cert_file, "tls_cert_file")?;
    let key_file = required(&cfg.tls_key_file, "tls_key_file")?;
    let certs = read_certs("tls_cert_file", cert_file)?;
    let key = read_key(key_file)?;
    // explicit provider: the process-wide default is ambiguous when another crate enables a
    // second one
    let provider = Arc::new(ring::default_provider());
    let verifier = client_verifier(cfg, &provider)?;
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid("tls_addr", format!("no TLS protocol version available: {e}")))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs, key)
        .map_err(|e| {
            let (k, c) = (key_file.display(), cert_file.display());
            invalid("tls_key_file", format!("{k} cannot serve the certificate in {c}: {e}"))
        })?;
    Ok(Some(TlsAcceptor::from(Arc::new(config))))
}

/// Why a TLS handshake did not complete.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    /// The client did not finish within `tls_handshake_timeout_ms`.
    #[error("not done within {0:?} (tls_handshake_timeout_ms)")]
    TimedOut(Duration),
    /// The client spoke something else than TLS, or its certificate was refused.
    #[error(transparent)]
    Failed(#[from] std::io::Error),
}

/// Run the server side of a handshake on `sock`, giving up after `within`.
pub async fn handshake(
    acceptor: &TlsAcceptor,
    sock: TcpStream,
    within: Duration,
) -> Result<ClientStream, HandshakeError> {
    match tokio::time::timeout(within, acceptor.accept(sock)).await {
        Ok(done) => Ok(done?),
        Err(_) => Err(HandshakeError::TimedOut(within)),
    }
}

/// Who may connect: anyone (no CA file), anyone whose certificate, if presented, the CA signed
/// (CA file alone), or only clients with such a certificate (`tls_auth_clients`).
fn client_verifier(
    cfg: &NodeConfig,
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<dyn ClientCertVerifier>, ConfigError> {
    let Some(ca_file) = &cfg.tls_ca_cert_file else {
        return Ok(WebPkiClientVerifier::no_client_auth());
    };
    let mut roots = RootCertStore::empty();
    for cert in read_certs("tls_ca_cert_file", ca_file)? {
        roots.add(cert).map_err(|e| {
            invalid("tls_ca_cert_file", format!("{}: not a usable CA certificate: {e}", ca_file.display()))
        })?;
    }
    let builder = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone());
    let builder = if cfg.tls_auth_clients { builder } else { builder.allow_unauthenticated() };
    builder.build().map_err(|e| invalid("tls_ca_cert_file", format!("{}: {e}", ca_file.display())))
}

fn required<'a>(file: &'a Option<PathBuf>, field: &'static str) -> Result<&'a Path, ConfigError> {
    file.as_deref().ok_or_else(|| invalid(field, "is required when tls_addr is set".into()))
}

/// Every certificate in a PEM file, at least one.
fn read_certs(field: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, ConfigError> {
    let pem = read(field, path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(field, format!("{}: not a PEM file: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(invalid(field, format!("{}: no CERTIFICATE in this PEM file", path.display())));
    }
    Ok(certs)
}

/// The first private key in a PEM file.
fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, ConfigError> {
    let field = "tls_key_file";
    PrivateKeyDer::from_pem_slice(&read(field, path)?)
        .map_err(|e| invalid(field, format!("{}: no private key in this PEM file ({e})", path.display())))
}

fn read(field: &'static str, path: &Path) -> Result<Vec<u8>, ConfigError> {
    std::fs::read(path).map_err(|e| invalid(field, format!("cannot read {}: {e}", path.display())))
}

fn invalid(field: &'static str, reason: String) -> ConfigError {
    ConfigError::Invalid { field, reason }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Member;

    /// A config with TLS on, its files in `dir`: a self-signed certificate and its key.
    fn config(dir: &Path) -> NodeConfig {
        let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        std::fs::write(dir.join("cert.pem"), made.cert.pem()).unwrap();
        std::fs::write(dir.join("key.pem"), made.signing_key.serialize_pem()).unwrap();
        NodeConfig {
            members: vec![Member { id: 0, peer: "127.0.0.1:1".parse().unwrap() }],
            replication: 1,
            tls_addr: Some("127.0.0.1:2".parse().unwrap()),
            tls_cert_file: Some(dir.join("cert.pem")),
            tls_key_file: Some(dir.join("key.pem")),
            ..NodeConfig::default()
        }
    }

    fn error(cfg: &NodeConfig) -> String {
        acceptor(cfg).err().expect("the config is refused").to_string()
    }

    #[test]
    fn off_unless_tls_addr_is_set() {
        assert!(acceptor(&NodeConfig::default()).unwrap().is_none());
    }

    #[test]
    fn a_certificate_and_its_key_make_an_acceptor() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(dir.path());
        assert!(acceptor(&cfg).unwrap().is_some());
        // its own certificate as the client CA, optional then required
        cfg.tls_ca_cert_file = cfg.tls_cert_file.clone();
        assert!(acceptor(&cfg).unwrap().is_some());
        cfg.tls_auth_clients = true;
        assert!(acceptor(&cfg).unwrap().is_some());
    }

    #[test]
    fn errors_name_the_field_and_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let good = config(dir.path());
        let missing = dir.path().join("missing.pem");
        let mut cfg = good.clone();
        cfg.tls_cert_file = Some(missing.clone());
        let e = error(&cfg);
        assert!(e.contains("`tls_cert_file`") && e.contains(&*missing.to_string_lossy()), "{e}");

        cfg = good.clone();
        cfg.tls_cert_file = good.tls_key_file.clone();
        let e = error(&cfg);
        assert!(e.contains("`tls_cert_file`") && e.contains("no CERTIFICATE"), "{e}");

        cfg = good.clone();
        cfg.tls_key_file = good.tls_cert_file.clone();
        let e = error(&cfg);
        assert!(e.contains("`tls_key_file`") && e.contains("no private key"), "{e}");

        let other = rcgen::KeyPair::generate().unwrap();
        std::fs::write(dir.path().join("other.pem"), other.serialize_pem()).unwrap();
        cfg = good.clone();
        cfg.tls_key_file = Some(dir.path().join("other.pem"));
        let e = error(&cfg);
        assert!(e.contains("`tls_key_file`") && e.contains("cannot serve the certificate"), "{e}");

        cfg = good.clone();
        cfg.tls_ca_cert_file = Some(missing);
        assert!(error(&cfg).contains("`tls_ca_cert_file`"));
    }
}
