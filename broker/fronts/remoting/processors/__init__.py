"""The 4.x remoting front's request processors: one module per family, each a function
(front, request, channel) -> reply; ``front.RemotingFront`` runs them."""
from __future__ import annotations

from ..protocol import (EMULATOR_BROKER_CONTROL, EMULATOR_CLOCK_ADVANCE, EMULATOR_DLQ, EMULATOR_FAULTS,
                        EMULATOR_GROUPS, EMULATOR_LITE, EMULATOR_TRANSACTIONS, RequestCode as RC)

__all__ = ["build_processor_table"]


def build_processor_table() -> dict:
    from . import (admin, admin_views, consumer_offsets, dlq, fault_rules, lite, pull, query, registration, route, send,
                   send_back, transaction)

    return {
        RC.SEND_MESSAGE: send.send_message,
        RC.SEND_MESSAGE_V2: send.send_message,
        RC.SEND_BATCH_MESSAGE: send.send_batch_message,
        RC.PULL_MESSAGE: pull.pull_message,
        RC.CONSUMER_SEND_MSG_BACK: send_back.consumer_send_msg_back,
        RC.END_TRANSACTION: transaction.end_transaction,
        RC.QUERY_CONSUMER_OFFSET: consumer_offsets.query_consumer_offset,
        RC.UPDATE_CONSUMER_OFFSET: consumer_offsets.update_consumer_offset,
        RC.GET_MAX_OFFSET: consumer_offsets.get_max_offset,
        RC.GET_MIN_OFFSET: consumer_offsets.get_min_offset,
        RC.SEARCH_OFFSET_BY_TIMESTAMP: consumer_offsets.search_offset_by_timestamp,
        RC.GET_EARLIEST_MSG_STORETIME: consumer_offsets.get_earliest_msg_storetime,
        RC.VIEW_MESSAGE_BY_ID: query.view_message_by_id,
        RC.QUERY_MESSAGE: query.query_message,
        RC.HEART_BEAT: registration.heart_beat,
        RC.UNREGISTER_CLIENT: registration.unregister_client,
        RC.GET_CONSUMER_LIST_BY_GROUP: registration.get_consumer_list_by_group,
        RC.LOCK_BATCH_MQ: registration.lock_batch_mq,
        RC.UNLOCK_BATCH_MQ: registration.unlock_batch_mq,
        RC.CHECK_CLIENT_CONFIG: registration.check_client_config,
        RC.GET_ROUTEINFO_BY_TOPIC: route.get_route_info_by_topic,
        RC.GET_BROKER_CLUSTER_INFO: route.get_broker_cluster_info,
        RC.UPDATE_AND_CREATE_TOPIC: admin.update_and_create_topic,
        RC.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: admin.update_and_create_subscription_group,
        RC.UPDATE_BROKER_CONFIG: admin.update_broker_config,
        RC.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: admin_views.get_all_topic_list,
        RC.GET_BROKER_RUNTIME_INFO: admin_views.get_broker_runtime_info,
        RC.INVOKE_BROKER_TO_RESET_OFFSET: admin_views.reset_offset,
        RC.GET_CONSUMER_CONNECTION_LIST: admin_views.consumer_connections,
        RC.GET_PRODUCER_CONNECTION_LIST: admin_views.producer_connections,
        RC.DELETE_SUBSCRIPTIONGROUP: admin_views.delete_subscription_group,
        RC.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: admin_views.get_all_subscription_group_config,
        RC.GET_TOPIC_STATS_INFO: admin_views.get_topic_stats_info,
        RC.GET_CONSUME_STATS: admin_views.get_consume_stats,
        RC.DELETE_TOPIC_IN_BROKER: admin_views.delete_topic_in_broker,
        RC.DELETE_TOPIC_IN_NAMESRV: admin_views.delete_topic_in_namesrv,
        EMULATOR_CLOCK_ADVANCE: admin.clock_advance,
        EMULATOR_BROKER_CONTROL: admin.broker_control,
        EMULATOR_DLQ: dlq.dead_letter_request,
        EMULATOR_GROUPS: admin_views.known_groups_request,
        EMULATOR_TRANSACTIONS: transaction.transactions_request,
        EMULATOR_FAULTS: fault_rules.fault_rules_request,
        EMULATOR_LITE: lite.lite_request,
    }
