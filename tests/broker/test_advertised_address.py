"""The address routes advertise (issue 17, item 7): never a wildcard. Before, `serve
--host 0.0.0.0` put 0.0.0.0 in every route and offsetMsgId and brokerIP1 was ignored;
advertised_ip chooses as upstream does (brokerIP1, else RemotingUtil.getLocalAddress)."""
import ipaddress
import json
import logging

import pytest

from rocketmq_emulator.broker.adapters.advertise import advertised_ip, local_addresses, pick_local_address
from rocketmq_emulator.broker.config import BrokerConfig
from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.fronts.remoting.protocol import RequestCode as RQ
from rocketmq_emulator.delay_scheduler import VirtualClock

from .wire import WireClient

MACHINE = (["127.0.0.1", "192.168.1.5", "10.0.0.7", "172.17.0.1"], ["::1", "fd00::2"])


@pytest.mark.parametrize("ipv4, ipv6, expected", [
    (["127.0.0.1", "192.168.1.5", "10.0.0.7", "172.17.0.1"], [], "10.0.0.7"),   # first not 127.0/192.168
    (["127.0.0.1", "192.168.1.5", "192.168.2.9"], ["fd00::2"], "192.168.2.9"),  # else the last IPv4
    (["127.0.0.1"], ["::1", "fd00::2"], "fd00::2"),                               # else the first IPv6
    (["127.0.0.1"], ["::1"], None),
])
def test_the_local_address_is_chosen_as_upstream_does(ipv4, ipv6, expected):
    assert pick_local_address(ipv4, ipv6) == expected


@pytest.mark.parametrize("wildcard", ["0.0.0.0", "::", ""])
def test_a_wildcard_bind_advertises_the_first_non_loopback_address_and_warns(caplog, wildcard):
    with caplog.at_level(logging.INFO, logger="broker"):
        assert advertised_ip(wildcard, None, addresses=MACHINE) == "10.0.0.7"
    [line] = caplog.records
    assert line.levelno == logging.WARNING
    assert "every interface" in line.getMessage() and "10.0.0.7" in line.getMessage()
    assert "brokerIP1" in line.getMessage()


def test_broker_ip1_wins_over_the_bind_address(caplog):
    with caplog.at_level(logging.INFO, logger="broker"):
        assert advertised_ip("0.0.0.0", "203.0.113.9", addresses=MACHINE) == "203.0.113.9"
        assert advertised_ip("127.0.0.1", "203.0.113.9", addresses=MACHINE) == "203.0.113.9"
        assert advertised_ip("0.0.0.0", "0.0.0.0", addresses=MACHINE) == "10.0.0.7"   # a wildcard brokerIP1 is unset
    assert [r.levelno for r in caplog.records] == [logging.WARNING, logging.WARNING]  # the two wildcard binds


def test_a_specific_bind_address_is_advertised_as_before_and_a_name_is_resolved(caplog):
    with caplog.at_level(logging.INFO, logger="broker"):
        assert advertised_ip("127.0.0.1", addresses=MACHINE) == "127.0.0.1"
        assert advertised_ip("localhost", addresses=MACHINE) in ("127.0.0.1", "::1")
    assert caplog.records == []
    with pytest.raises(ValueError, match="does not resolve"):
        advertised_ip("0.0.0.0", "no-such-host.invalid")


def test_no_non_loopback_address_falls_back_to_loopback_and_says_so(caplog):
    with caplog.at_level(logging.INFO, logger="broker"):
        assert advertised_ip("0.0.0.0", addresses=(["127.0.0.1"], ["::1"])) == "127.0.0.1"
    assert "only clients on this machine" in caplog.records[0].getMessage()


def test_this_machine_gives_an_address_that_is_not_a_wildcard():
    ipv4, ipv6 = local_addresses()
    assert all(ipaddress.ip_address(ip).version == 4 for ip in ipv4)
    assert all(ipaddress.ip_address(ip).version == 6 for ip in ipv6)
    assert not ipaddress.ip_address(advertised_ip("0.0.0.0")).is_unspecified


def test_routes_and_message_ids_carry_the_advertised_address():
    ip = advertised_ip("0.0.0.0", addresses=MACHINE)
    core = BrokerCore.in_memory(VirtualClock(), BrokerConfig(broker_ip=ip, listen_port=10911))
    client = WireClient(core)
    route = json.loads(client.call(RQ.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"}).body)
    assert route["brokerDatas"][0]["brokerAddrs"] == {"0": "10.0.0.7:10911"}
    sent = client.send("Orders")
    assert sent.code == 0 and sent.ext_fields["msgId"].startswith("0A000007")      # 10.0.0.7 as hex
