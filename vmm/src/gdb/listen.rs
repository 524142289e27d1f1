//! Where the debugger connects: `--gdb tcp:HOST:PORT` or `--gdb unix:PATH`, parsed and bound
//! as `vmm receive --listen` is ([`crate::run::migrate::Endpoint`],
//! [`crate::run::migrate::Listener`]).

use gdbstub::conn::ConnectionExt;

use super::GdbError;
use crate::run::migrate::{Endpoint, Listener, Stream};

/// `--gdb` and `--gdb-wait`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GdbOptions {
    /// Where to listen.
    pub endpoint: Endpoint,
    /// Hold the guest before its first instruction until a debugger attaches.
    pub wait: bool,
}

/// A debugger's connection as `gdbstub` drives it.
pub type Connection = Box<dyn ConnectionExt<Error = std::io::Error>>;

/// The next byte from the debugger if one has arrived (without waiting): what the stubs'
/// event loops look at between runs of the guest.
pub fn incoming(conn: &mut Connection) -> std::io::Result<Option<u8>> {
    if conn.peek()?.is_some() {
        conn.read().map(Some)
    } else {
        Ok(None)
    }
}

/// The listening socket of the stub.
#[derive(Debug)]
pub struct GdbListener {
    listener: Listener,
}

impl GdbListener {
    /// Listens at `endpoint` and says where on stderr (the port the system chose for port
    /// 0 included).
    pub fn bind(endpoint: &Endpoint) -> Result<GdbListener, GdbError> {
        let listener = Listener::bind(endpoint)?;
        eprintln!(
            "vmm: gdb stub listening on {} (gdb: target remote {})",
            listener.endpoint(),
            match listener.endpoint() {
                Endpoint::Tcp(a) => a,
                Endpoint::Unix(p) => p.display().to_string(),
            }
        );
        Ok(GdbListener { listener })
    }

    /// A debugger's connection: waiting for one when `wait`, otherwise only if one is
    /// there already.
    pub fn accept(&self, wait: bool) -> Result<Option<Connection>, GdbError> {
        let err = |source| GdbError::Accept {
            addr: self.listener.endpoint().to_string(),
            source,
        };
        self.listener.set_blocking(wait).map_err(err)?;
        match self.listener.accept() {
            Ok(Stream::Tcp(s)) => {
                // Packets are small and answered one at a time.
                let _ = s.set_nodelay(true);
                Ok(Some(Box::new(s)))
            }
            Ok(Stream::Unix(s)) => Ok(Some(Box::new(s))),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Ok(None),
            Err(e) => Err(err(e)),
        }
    }
}
