//! TLS to PostgreSQL as libpq does it: `sslmode` and `sslrootcert` from the
//! URL's query, else `PGSSLMODE` / `PGSSLROOTCERT`, over rustls.
//!
//! - `disable`: plain. `allow`, `prefer` (the default): TLS when the server
//!   offers it (the certificate unverified), else plain.
//! - `require`: TLS or no connection; the certificate unverified unless a CA
//!   file is at hand (`sslrootcert`, else `~/.postgresql/root.crt` if it
//!   exists), when it is checked as `verify-ca` (libpq's rule).
//! - `verify-ca`: the server's chain must lead to a CA of `sslrootcert`.
//! - `verify-full`: that, and the certificate must name the host.
//! - `sslrootcert=system`: the system's CAs, and `verify-full` unless set
//!   otherwise (libpq 16's rule; weaker modes are refused).

use anyhow::Result;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::path::PathBuf;
use std::sync::Arc;

/// libpq's `sslmode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Disable,
    Allow,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl Mode {
    fn parse(s: &str) -> Option<Mode> {
        Some(match s {
            "disable" => Mode::Disable,
            "allow" => Mode::Allow,
            "prefer" => Mode::Prefer,
            "require" => Mode::Require,
            "verify-ca" => Mode::VerifyCa,
            "verify-full" => Mode::VerifyFull,
            _ => return None,
        })
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::Disable => "disable",
            Mode::Allow => "allow",
            Mode::Prefer => "prefer",
            Mode::Require => "require",
            Mode::VerifyCa => "verify-ca",
            Mode::VerifyFull => "verify-full",
        }
    }
}

/// Where the CAs come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Roots {
    /// None named, and no `~/.postgresql/root.crt`.
    None,
    /// A PEM file: named by `sslrootcert` (`named`), or libpq's default.
    File { path: PathBuf, named: bool },
    /// `sslrootcert=system`.
    System,
}

/// The TLS settings of a connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Settings {
    pub(crate) mode: Mode,
    pub(crate) roots: Roots,
    /// Whose setting `mode` is, for messages: `sslmode`, or `PGSSLMODE`.
    pub(crate) mode_from: &'static str,
}

impl Settings {
    /// How the certificate is checked: None (not at all), or `Some(true)`
    /// with the host name, `Some(false)` the chain only.
    fn verify(&self) -> Option<bool> {
        match (self.mode, &self.roots) {
            (Mode::VerifyFull, _) => Some(true),
            (Mode::VerifyCa, _) => Some(false),
            (Mode::Require, Roots::File { .. }) => Some(false),
            _ => None,
        }
    }

    /// The settings as a message names them: `sslmode=verify-full, sslrootcert=ca.crt`.
    pub(crate) fn describe(&self) -> String {
        let mode =
            format!("{}={}", if self.mode_from == "PGSSLMODE" { "PGSSLMODE" } else { "sslmode" }, self.mode.name());
        match &self.roots {
            Roots::File { path, .. } if self.verify().is_some() => format!("{mode}, sslrootcert={}", path.display()),
            Roots::System => format!("{mode}, sslrootcert=system"),
            _ => mode,
        }
    }

    /// The setting a failed verification names.
    pub(crate) fn roots_name(&self) -> String {
        match &self.roots {
            Roots::File { path, .. } => format!("sslrootcert ({})", path.display()),
            Roots::System => "sslrootcert=system".into(),
            Roots::None => "sslrootcert".into(),
        }
    }

    /// Whether a failed TLS handshake falls back to plain (libpq's allow, prefer).
    pub(crate) fn falls_back(&self) -> bool {
        matches!(self.mode, Mode::Allow | Mode::Prefer)
    }

    /// tokio-postgres's mode: it negotiates, the connector verifies.
    pub(crate) fn negotiate(&self) -> postgres::config::SslMode {
        match self.mode {
            Mode::Disable => postgres::config::SslMode::Disable,
            Mode::Allow | Mode::Prefer => postgres::config::SslMode::Prefer,
            _ => postgres::config::SslMode::Require,
        }
    }
}

/// `%XX` decoded (URL query values).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Some(v) = std::str::from_utf8(&b[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Split the TLS settings off `url` (tokio-postgres reads neither
/// `verify-ca` nor `sslrootcert`): the URL without them, and the settings,
/// `env` standing for the environment. Err: a message naming the setting.
pub(crate) fn settings(
    url: &str,
    env: impl Fn(&str) -> Option<String>,
    home: Option<PathBuf>,
) -> std::result::Result<(String, Settings), String> {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let (mut mode, mut rootcert, mut kept) = (None, None, Vec::new());
    for pair in query.into_iter().flat_map(|q| q.split('&')).filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "sslmode" => mode = Some((percent_decode(value), "sslmode")),
            "sslrootcert" => rootcert = Some(percent_decode(value)),
            _ => kept.push(pair),
        }
    }
    let mode = mode.or_else(|| env("PGSSLMODE").filter(|v| !v.is_empty()).map(|v| (v, "PGSSLMODE")));
    let rootcert = rootcert.or_else(|| env("PGSSLROOTCERT")).filter(|v| !v.is_empty());
    let roots = match rootcert.as_deref() {
        Some("system") => Roots::System,
        Some(path) => Roots::File { path: PathBuf::from(path), named: true },
        None => match home.map(|h| h.join(".postgresql/root.crt")).filter(|p| p.exists()) {
            Some(path) => Roots::File { path, named: false },
            None => Roots::None,
        },
    };
    let (mode, mode_from) = match mode {
        None if roots == Roots::System => (Mode::VerifyFull, "sslmode"),
        None => (Mode::Prefer, "sslmode"),
        Some((v, from)) => match Mode::parse(&v) {
            Some(m) => (m, from),
            None => {
                return Err(format!(
                    "{from} \"{v}\" is not one of disable, allow, prefer, require, verify-ca, verify-full"
                ))
            }
        },
    };
    if roots == Roots::System && mode != Mode::VerifyFull && mode != Mode::Disable {
        return Err(format!(
            "sslrootcert=system needs sslmode=verify-full (the system's CAs vouch for host names), not {}",
            mode.name()
        ));
    }
    if matches!(mode, Mode::VerifyCa | Mode::VerifyFull) && roots == Roots::None {
        return Err(format!(
            "sslmode={} needs sslrootcert, the file of the CA that signed the server's certificate (~/.postgresql/root.crt does not exist), or sslrootcert=system",
            mode.name()
        ));
    }
    let url = match kept.is_empty() {
        true => base.to_string(),
        false => format!("{base}?{}", kept.join("&")),
    };
    Ok((url, Settings { mode, roots, mode_from }))
}

/// Accepts any certificate (`prefer`, `require` without a CA), checking
/// only that the server holds its key (the handshake's signatures).
#[derive(Debug)]
struct Unverified(Arc<CryptoProvider>);

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca`: the chain to a trusted CA, validity dates included, but not
/// the host name (webpki checks the name last, so a name error means the
/// rest held).
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.0.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The CAs of `settings`. Err: a message naming `sslrootcert`.
fn roots(settings: &Settings) -> std::result::Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    match &settings.roots {
        Roots::None => {}
        Roots::System => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = store.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err("sslrootcert=system: no CA certificate found in the system's store".into());
            }
        }
        Roots::File { path, .. } => {
            let shown = path.display();
            let text = std::fs::read(path).map_err(|e| format!("sslrootcert {shown}: {e}"))?;
            let certs = CertificateDer::pem_slice_iter(&text)
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|e| format!("sslrootcert {shown}: not a PEM file of certificates ({e})"))?;
            if certs.is_empty() {
                return Err(format!("sslrootcert {shown}: no certificate in it (PEM, BEGIN CERTIFICATE)"));
            }
            for c in certs {
                store.add(c).map_err(|e| format!("sslrootcert {shown}: a certificate kanon cannot use ({e})"))?;
            }
        }
    }
    Ok(store)
}

/// The rustls client configuration for `settings` (None: no TLS at all).
/// Err: a message naming the setting.
pub(crate) fn client_config(settings: &Settings) -> std::result::Result<Option<ClientConfig>, String> {
    if settings.mode == Mode::Disable {
        return Ok(None);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?;
    let verifier: Arc<dyn ServerCertVerifier> = match settings.verify() {
        None => Arc::new(Unverified(provider)),
        Some(full) => {
            let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots(settings)?), provider)
                .build()
                .map_err(|e| format!("{}: {e}", settings.roots_name()))?;
            match full {
                true => webpki,
                false => Arc::new(ChainOnly(webpki)),
            }
        }
    };
    Ok(Some(builder.dangerous().with_custom_certificate_verifier(verifier).with_no_client_auth()))
}

/// Why a connection failed, when TLS is the reason: the message naming the
/// setting (a failed verification names `sslrootcert` and `sslmode`).
pub(crate) fn explain(settings: &Settings, host: &str, error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut e: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(cur) = e {
        // (An io::Error's source() is its inner error's source: look inside.)
        let inner = cur.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref());
        let found = cur.downcast_ref::<rustls::Error>().or_else(|| inner.and_then(|i| i.downcast_ref()));
        if let Some(tls) = found {
            let how = settings.describe();
            return Some(match tls {
                rustls::Error::InvalidCertificate(
                    CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
                ) => format!(
                    "the server's certificate is not for host {host} ({how}: verify-full checks the host name, verify-ca the CA only)"
                ),
                rustls::Error::InvalidCertificate(
                    CertificateError::UnknownIssuer | CertificateError::BadSignature,
                ) => format!(
                    "the server's certificate is not signed by a CA of {} ({how})",
                    settings.roots_name()
                ),
                rustls::Error::InvalidCertificate(c) => {
                    format!("the server's certificate failed verification against {}: {c:?} ({how})", settings.roots_name())
                }
                other => format!("TLS failed ({how}): {other}"),
            });
        }
        e = cur.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(url: &str, env: &[(&str, &str)]) -> std::result::Result<(String, Settings), String> {
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        settings(url, |k| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()), None)
    }

    #[test]
    fn settings_as_libpq_reads_them() {
        let (url, s) = parse("postgresql://u:pw@h/d", &[]).unwrap();
        assert_eq!((url.as_str(), s.mode, s.roots), ("postgresql://u:pw@h/d", Mode::Prefer, Roots::None));
        let (url, s) =
            parse("postgresql://u@h/d?connect_timeout=3&sslmode=verify-full&sslrootcert=%2Ftmp%2Fca%20x.pem", &[])
                .unwrap();
        assert_eq!(url, "postgresql://u@h/d?connect_timeout=3");
        assert_eq!(s.mode, Mode::VerifyFull);
        assert_eq!(s.roots, Roots::File { path: "/tmp/ca x.pem".into(), named: true });
        assert_eq!(s.verify(), Some(true));
        // The environment when the URL says nothing; the URL first.
        let (_, s) = parse("postgresql://h/d", &[("PGSSLMODE", "require"), ("PGSSLROOTCERT", "/ca.pem")]).unwrap();
        assert_eq!((s.mode, s.mode_from, s.verify()), (Mode::Require, "PGSSLMODE", Some(false)));
        let (_, s) = parse("postgresql://h/d?sslmode=disable", &[("PGSSLMODE", "require")]).unwrap();
        assert_eq!(s.mode, Mode::Disable);
        // require without a CA: encrypted, unverified.
        let (_, s) = parse("postgresql://h/d?sslmode=require", &[]).unwrap();
        assert_eq!(s.verify(), None);
        // system: verify-full by default, and nothing weaker.
        let (_, s) = parse("postgresql://h/d?sslrootcert=system", &[]).unwrap();
        assert_eq!((s.mode, s.roots), (Mode::VerifyFull, Roots::System));
        assert!(parse("postgresql://h/d?sslrootcert=system&sslmode=require", &[])
            .unwrap_err()
            .contains("sslrootcert=system"));
        let e = parse("postgresql://h/d?sslmode=bogus", &[]).unwrap_err();
        assert!(e.starts_with("sslmode \"bogus\" is not one of"), "{e}");
        let e = parse("postgresql://h/d", &[("PGSSLMODE", "strict")]).unwrap_err();
        assert!(e.starts_with("PGSSLMODE \"strict\""), "{e}");
        let e = parse("postgresql://h/d?sslmode=verify-ca", &[]).unwrap_err();
        assert!(e.contains("sslmode=verify-ca needs sslrootcert"), "{e}");
    }

    #[test]
    fn a_bad_ca_file_names_sslrootcert() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none.pem");
        let bad = dir.path().join("bad.pem");
        std::fs::write(&bad, "not a certificate\n").unwrap();
        for (path, says) in [(&missing, "sslrootcert "), (&bad, "no certificate in it")] {
            let s = Settings {
                mode: Mode::VerifyFull,
                roots: Roots::File { path: path.clone(), named: true },
                mode_from: "sslmode",
            };
            let e = client_config(&s).err().unwrap();
            assert!(e.starts_with("sslrootcert ") && e.contains(says), "{e}");
        }
        let plain = Settings { mode: Mode::Disable, roots: Roots::None, mode_from: "sslmode" };
        assert!(client_config(&plain).unwrap().is_none());
    }
}
