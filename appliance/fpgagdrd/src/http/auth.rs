//! The API token: mutating requests must carry `Authorization: Bearer <token>`.
//!
//! Owns: [`Token`] (where it comes from, loading or generating it) and [`require`], the
//! middleware that refuses a request that is not `GET`/`HEAD` without the token (401,
//! `rule auth-token`). Reading stays open: the dashboard, `/metrics` and the stream need
//! no token. Must not: log or print the token, except the one line on stdout when it is
//! generated (first start, nothing configured).
//! Neighbours: `main.rs` resolves the token at start; `api/mod.rs` puts [`require`] in front
//! of the router; `webui/js/api.js` sends it.
//!
//! Where the token comes from, first match wins: the environment variable
//! [`TOKEN_ENV`], the file given by `--token-file`, the file [`DEFAULT_FILE`] beside the
//! config file (generated there, mode 0600, on first start).

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::refusal::Refusal;

/// Environment variable that sets the token (wins over every file).
pub const TOKEN_ENV: &str = "FPGAGDR_TOKEN";
/// Name of the token file beside the config file.
pub const DEFAULT_FILE: &str = "token";
/// Shortest token accepted from the environment or a file, characters.
pub const MIN_LEN: usize = 16;
/// Random bytes in a generated token (shown as twice as many hex digits).
pub const GENERATED_BYTES: usize = 32;

/// The secret the mutating endpoints ask for. `Debug` does not show it.
#[derive(Clone)]
pub struct Token(Arc<str>);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

/// Why no token could be had: the service does not start, and says which.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// The token's text breaks the rule (too short, spaces, not visible ASCII).
    #[error(
        "rule auth-token: a token must be at least {MIN_LEN} visible ASCII characters without spaces"
    )]
    Rule,
    /// The token in [`TOKEN_ENV`] breaks the rule.
    #[error("{TOKEN_ENV}: {0}")]
    Env(Box<TokenError>),
    /// The token file cannot be read, or its token breaks the rule.
    #[error("token file {}: {source}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The operating system gave no random bytes.
    #[error("generating the API token: {0}")]
    Random(getrandom::Error),
    /// The generated token could not be saved.
    #[error("saving the API token to {}: {source}", path.display())]
    Save {
        /// The file.
        path: PathBuf,
        /// The write's error.
        source: std::io::Error,
    },
}

/// Where the token in force came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The environment variable [`TOKEN_ENV`].
    Env,
    /// An existing file (`--token-file`, or the default file from an earlier start).
    File(PathBuf),
    /// Generated now and saved to this file: the caller prints it once.
    Generated(PathBuf),
}

impl Token {
    /// A token with this text, checked like a configured one (at least [`MIN_LEN`]
    /// visible ASCII characters, no spaces).
    pub fn new(text: &str) -> Result<Token, TokenError> {
        let t = text.trim();
        if t.len() < MIN_LEN || !t.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(TokenError::Rule);
        }
        Ok(Token(t.into()))
    }

    /// The token's text (to print once, or for a client in tests).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Resolves the token: `env` (the value of [`TOKEN_ENV`]), else `file`, else the
    /// file [`DEFAULT_FILE`] in `config_dir`, generated there when it does not exist.
    pub fn resolve(
        env: Option<&str>,
        file: Option<&Path>,
        config_dir: &Path,
    ) -> Result<(Token, Origin), TokenError> {
        if let Some(v) = env.filter(|v| !v.is_empty()) {
            return Ok((
                Token::new(v).map_err(|e| TokenError::Env(Box::new(e)))?,
                Origin::Env,
            ));
        }
        if let Some(f) = file {
            return Ok((read_file(f)?, Origin::File(f.to_path_buf())));
        }
        let path = config_dir.join(DEFAULT_FILE);
        if path.exists() {
            return Ok((read_file(&path)?, Origin::File(path)));
        }
        let token = generate()?;
        write_new(&path, token.expose())?;
        Ok((token, Origin::Generated(path)))
    }

    /// Whether a request's headers carry this token as `Bearer`.
    pub fn accepts(&self, authorization: Option<&HeaderValue>) -> bool {
        let Some(v) = authorization.and_then(|v| v.to_str().ok()) else {
            return false;
        };
        let Some((scheme, given)) = v.trim().split_once(' ') else {
            return false;
        };
        scheme.eq_ignore_ascii_case("bearer") && same(given.trim().as_bytes(), self.0.as_bytes())
    }
}

/// Compares without returning early at the first differing byte, so the reply time
/// does not tell how much of a guess was right.
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn read_file(path: &Path) -> Result<Token, TokenError> {
    let file_error = |source: Box<dyn std::error::Error + Send + Sync>| TokenError::File {
        path: path.to_path_buf(),
        source,
    };
    let text = std::fs::read_to_string(path).map_err(|e| file_error(Box::new(e)))?;
    if let Ok(meta) = std::fs::metadata(path)
        && meta.permissions().mode() & 0o077 != 0
    {
        tracing::warn!(
            "token file {} is readable by other users (mode {:o}); chmod 600 it",
            path.display(),
            meta.permissions().mode() & 0o777
        );
    }
    Token::new(&text).map_err(|e| file_error(Box::new(e)))
}

fn generate() -> Result<Token, TokenError> {
    let mut bytes = [0u8; GENERATED_BYTES];
    getrandom::fill(&mut bytes).map_err(TokenError::Random)?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(Token(hex.into()))
}

/// Writes a new file readable by its owner only; never replaces an existing one.
fn write_new(path: &Path, text: &str) -> Result<(), TokenError> {
    let fail = |source: std::io::Error| TokenError::Save {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(fail)?;
    f.write_all(format!("{text}\n").as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(fail)
}

/// Middleware: lets `GET`, `HEAD` and `OPTIONS` through; any other method needs the
/// token, else 401 `auth-token` with `WWW-Authenticate: Bearer`.
pub async fn require(State(token): State<Token>, req: Request, next: Next) -> Response {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS)
        || token.accepts(req.headers().get(header::AUTHORIZATION))
    {
        return next.run(req).await;
    }
    Refusal::AuthToken {
        presented: req.headers().contains_key(header::AUTHORIZATION),
    }
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_once_then_read_back_with_mode_0600() {
        let dir = tempfile::tempdir().unwrap();
        let (t1, o1) = Token::resolve(None, None, dir.path()).unwrap();
        let path = dir.path().join(DEFAULT_FILE);
        assert_eq!(o1, Origin::Generated(path.clone()));
        assert_eq!(t1.expose().len(), 2 * GENERATED_BYTES);
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let (t2, o2) = Token::resolve(None, None, dir.path()).unwrap();
        assert_eq!((t2.expose(), o2), (t1.expose(), Origin::File(path)));
    }

    #[test]
    fn env_wins_and_short_tokens_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (t, o) = Token::resolve(Some("0123456789abcdef"), None, dir.path()).unwrap();
        assert_eq!((t.expose(), o), ("0123456789abcdef", Origin::Env));
        assert!(!dir.path().join(DEFAULT_FILE).exists());
        let e = Token::resolve(Some("short"), None, dir.path()).unwrap_err();
        assert!(matches!(&e, TokenError::Env(inner) if matches!(**inner, TokenError::Rule)));
        assert!(
            e.to_string().starts_with("FPGAGDR_TOKEN: rule auth-token"),
            "{e}"
        );
        let e = Token::resolve(None, Some(&dir.path().join("none")), dir.path()).unwrap_err();
        assert!(e.to_string().contains("token file"), "{e}");
    }

    #[test]
    fn bearer_is_compared_exactly() {
        let t = Token::new("0123456789abcdef").unwrap();
        let h = |s: &'static str| Some(HeaderValue::from_static(s));
        assert!(t.accepts(h("Bearer 0123456789abcdef").as_ref()));
        assert!(t.accepts(h("bearer 0123456789abcdef").as_ref()));
        assert!(!t.accepts(h("Bearer 0123456789abcdeF").as_ref()));
        assert!(!t.accepts(h("Bearer 0123456789abcde").as_ref()));
        assert!(!t.accepts(h("Basic 0123456789abcdef").as_ref()));
        assert!(!t.accepts(None));
    }
}
