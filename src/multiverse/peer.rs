//! Who is on the other end of a loopback connection: the user id that owns the client's
//! socket, read from the kernel's table of TCP sockets (`/proc/net/tcp`, as identd does).
//! A token proves the caller could read *this* daemon's `daemon.json`; handing out another
//! daemon's token asks more: that the caller's user could read *that* file.

use std::io::{BufReader, Read as _};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::Path;

/// The table is read up to this many bytes (about 100,000 sockets).
const MAX_TABLE_BYTES: u64 = 16 * 1024 * 1024;

/// The uid owning the socket at `peer` that is connected to `local` (this server's end),
/// if the kernel's IPv4 table has it (the server listens on 127.0.0.1 only).
pub(crate) fn loopback_peer_uid(peer: SocketAddr, local: SocketAddr) -> Option<u32> {
    let file = std::fs::File::open("/proc/net/tcp").ok()?;
    peer_uid_in(BufReader::new(file.take(MAX_TABLE_BYTES)), peer, local)
}

/// [`loopback_peer_uid`] over a table's text.
fn peer_uid_in(table: impl std::io::BufRead, peer: SocketAddr, local: SocketAddr) -> Option<u32> {
    // An IPv6 end is never in this (IPv4) table: no line matches it.
    for line in table.lines().skip(1) {
        let line = line.ok()?;
        let fields: Vec<&str> = line.split_whitespace().collect();
        // sl local_address rem_address st tx:rx tr:when retrnsmt uid ...
        let (Some(from), Some(to), Some(uid)) = (fields.get(1), fields.get(2), fields.get(7))
        else {
            continue;
        };
        // The client's socket: its local end is the peer, its remote end is us.
        if parse(from).map(SocketAddr::from) == Some(peer)
            && parse(to).map(SocketAddr::from) == Some(local)
        {
            return uid.parse().ok();
        }
    }
    None
}

/// `0100007F:1F90`: the address as the kernel's 32-bit word in hex (little-endian on
/// the machines this runs on), then the port.
fn parse(text: &str) -> Option<SocketAddrV4> {
    let (ip, port) = text.split_once(':')?;
    let ip = u32::from_str_radix(ip, 16).ok()?;
    let port = u16::from_str_radix(port, 16).ok()?;
    Some(SocketAddrV4::new(Ipv4Addr::from(ip.to_le_bytes()), port))
}

/// Whether the user `uid` could read the file at `path`: root, or its owner when the file
/// is the owner's alone (no group or other permission: a `daemon.json` anyone else can
/// read is not trusted to say whose it is).
pub(crate) fn may_read(uid: u32, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    uid == 0 || (meta.uid() == uid && meta.mode() & 0o077 == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clients_socket_is_found_by_its_two_ends() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1 1 0\n\
   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000  1000        0 2 1 0\n\
   2: 0100007F:C350 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1234        0 3 1 0\n";
        let server: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let client: SocketAddr = "127.0.0.1:50000".parse().unwrap();
        assert_eq!(peer_uid_in(table.as_bytes(), client, server), Some(1234));
        let other: SocketAddr = "127.0.0.1:50001".parse().unwrap();
        assert_eq!(peer_uid_in(table.as_bytes(), other, server), None);
    }

    #[test]
    fn a_real_connection_is_owned_by_this_process_user() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, peer) = listener.accept().unwrap();
        let uid = loopback_peer_uid(peer, server.local_addr().unwrap());
        assert_eq!(uid, Some(nix::unistd::geteuid().as_raw()));
        drop(client);
    }
}
