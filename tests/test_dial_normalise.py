"""Addresses are normalised before the dial policy: an IPv4 address written as IPv6 is the IPv4
address (issue 30, item 8: a loopback-refusing node dialled `::ffff:127.0.0.1`)."""

from __future__ import annotations

import ipaddress

from hypothesis import given
from hypothesis import strategies as st

from kademlia import PeerTable
from kademlia.addresses import AddressBook, DialPolicy, PeerAddress, normalise_host
from swarm.net.topology import Topology

PUBLIC = DialPolicy.for_host("0.0.0.0")
LOOPBACK = DialPolicy.for_host("127.0.0.1")
BASE = bytes(32)


def test_ipv4_written_as_ipv6_is_the_ipv4_address() -> None:
    for form in ("::ffff:127.0.0.1", "::FFFF:7f00:1", "0:0:0:0:0:ffff:127.0.0.1", "::ffff:0:127.0.0.1"):
        assert normalise_host(form) == "127.0.0.1", form
        assert not PUBLIC.allows(form) and LOOPBACK.allows(form), form
    assert normalise_host("::127.0.0.1") == "127.0.0.1"  # IPv4-compatible (deprecated)
    assert normalise_host("::1") == "::1" and normalise_host("::") == "::"
    assert normalise_host("FE80::1%eth0") == "fe80::1"
    for name in ("localhost", "127.1", "0x7f.0.0.1", "2130706433", " 127.0.0.1", "[::1]", ""):
        assert normalise_host(name) is None, name
        assert not LOOPBACK.allows(name) and not PUBLIC.allows(name), name


def test_tunnels_to_a_refused_ipv4_address_are_refused() -> None:
    assert not PUBLIC.allows("2002:7f00:1::")  # 6to4 of 127.0.0.1
    assert not PUBLIC.allows("2001:0:4136:e378:8000:63bf:80ff:fffe")  # Teredo, client 127.0.0.1
    assert PUBLIC.allows("2002:0808:0808::") and PUBLIC.allows("::ffff:8.8.8.8")


def test_the_topology_keeps_the_normal_form() -> None:
    topology = Topology(
        BASE,
        PeerTable(BASE),
        AddressBook(BASE),
        LOOPBACK,
        forget_record=lambda overlay: None,
        changed=lambda: None,
    )
    peer = bytes([0x80]) + bytes(31)
    assert topology.learn(PeerAddress(peer, "::ffff:127.0.0.2", 1634))
    assert topology.book.get(peer) == PeerAddress(peer, "127.0.0.2", 1634)
    public = Topology(
        BASE, PeerTable(BASE), AddressBook(BASE), PUBLIC, forget_record=lambda o: None, changed=lambda: None
    )
    assert not public.learn(PeerAddress(peer, "::ffff:127.0.0.1", 1634))
    assert public.refused == 1


def forms(ip: ipaddress.IPv4Address) -> st.SearchStrategy[str]:
    """Ways to write `ip`: dotted, and as IPv6 (mapped, translated, compatible), any case, any
    zero compression."""
    value = int(ip)
    mapped = ipaddress.IPv6Address((0xFFFF << 32) | value)
    translated = ipaddress.IPv6Address((0xFFFF0000 << 32) | value)
    compatible = ipaddress.IPv6Address(value)
    v6 = [mapped, translated] + ([compatible] if value > 1 else [])
    written = [str(ip)]
    for a in v6:
        written += [
            a.compressed,
            a.exploded,
            a.exploded.upper(),
            f"::ffff:{ip}" if a is mapped else a.compressed,
        ]
    return st.sampled_from(written)


ADDRESSES = st.builds(ipaddress.IPv4Address, st.integers(0, 2**32 - 1)) | st.sampled_from(
    [ipaddress.IPv4Address(a) for a in ("127.0.0.1", "127.5.6.7", "10.0.0.1", "169.254.1.1", "224.0.0.1")]
)


@given(ADDRESSES.flatmap(lambda ip: st.tuples(st.just(ip), forms(ip))))
def test_every_form_of_an_ipv4_address_is_judged_as_the_address(
    case: tuple[ipaddress.IPv4Address, str],
) -> None:
    ip, form = case
    assert normalise_host(form) == str(ip)
    for policy in (PUBLIC, LOOPBACK, DialPolicy(["10.0.0.0/8"])):
        assert policy.allows(form) == policy.allows(str(ip)), (policy, form)


@given(st.builds(ipaddress.IPv6Address, st.integers(0, 2**128 - 1)))
def test_normalising_is_idempotent_and_keeps_the_address(ip: ipaddress.IPv6Address) -> None:
    normal = normalise_host(ip.exploded.upper())
    assert normal is not None and normalise_host(normal) == normal
    assert ipaddress.ip_address(normal) in {
        ip,
        ip.ipv4_mapped,
        *([ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)]),
    }
