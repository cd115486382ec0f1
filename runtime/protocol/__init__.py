"""runtime.protocol"""

from ._frames import INVALID_REQUEST as INVALID_REQUEST
from ._frames import MAX_BUFFERED_BYTES as MAX_BUFFERED_BYTES
from ._frames import MAX_PAYLOAD_BYTES as MAX_PAYLOAD_BYTES
from ._frames import MAX_PREAUTH_PAYLOAD_BYTES as MAX_PREAUTH_PAYLOAD_BYTES
from ._frames import NOT_PAIRED as NOT_PAIRED
from ._frames import PROTOCOL_VERSION as PROTOCOL_VERSION
from ._frames import TICK_INTERVAL_MS as TICK_INTERVAL_MS
from ._frames import UNAVAILABLE as UNAVAILABLE
from ._frames import CancelFrame as CancelFrame
from ._frames import ClawlaneError as ClawlaneError
from ._frames import GatewayError as GatewayError
from ._frames import NonEmpty as NonEmpty
from ._frames import RequestFrame as RequestFrame
from ._frames import decode_inbound as decode_inbound
from ._frames import decode_params as decode_params
from ._frames import describe_exception as describe_exception
from ._frames import encode_event as encode_event
from ._frames import encode_response as encode_response
from ._frames import internal_error as internal_error
from ._frames import invalid_request as invalid_request
from ._frames import missing_scope as missing_scope
from ._frames import opt as opt
from ._frames import peek_request_id as peek_request_id
from ._scopes import operator_scope_satisfied as operator_scope_satisfied
from ._scopes import role_scopes_allow as role_scopes_allow
from ._wire import METHOD_SCOPES as METHOD_SCOPES
from ._wire import AgentIdentityParams as AgentIdentityParams
from ._wire import AgentsListParams as AgentsListParams
from ._wire import AgentWaitParams as AgentWaitParams
from ._wire import ChannelsStatusParams as ChannelsStatusParams
from ._wire import ChatAbortParams as ChatAbortParams
from ._wire import ChatHistoryParams as ChatHistoryParams
from ._wire import ChatInjectParams as ChatInjectParams
from ._wire import ChatMetadataParams as ChatMetadataParams
from ._wire import ChatSendParams as ChatSendParams
from ._wire import CommandsListParams as CommandsListParams
from ._wire import ConfigApplyParams as ConfigApplyParams
from ._wire import ConfigGetParams as ConfigGetParams
from ._wire import ConfigPatchParams as ConfigPatchParams
from ._wire import ConfigSetParams as ConfigSetParams
from ._wire import ConnectParams as ConnectParams
from ._wire import ConnectParamsAuth as ConnectParamsAuth
from ._wire import ConnectParamsDevice as ConnectParamsDevice
from ._wire import CronAddParams as CronAddParams
from ._wire import CronAddParamsDeliveryAnnounce as CronAddParamsDeliveryAnnounce
from ._wire import CronAddParamsDeliveryWebhook as CronAddParamsDeliveryWebhook
from ._wire import CronAddParamsPayloadAgentTurn as CronAddParamsPayloadAgentTurn
from ._wire import CronAddParamsScheduleAt as CronAddParamsScheduleAt
from ._wire import CronListParams as CronListParams
from ._wire import CronRunsParams as CronRunsParams
from ._wire import CronStatusParams as CronStatusParams
from ._wire import HooksStatusParams as HooksStatusParams
from ._wire import LogsTailParams as LogsTailParams
from ._wire import ModelsAuthStatusParams as ModelsAuthStatusParams
from ._wire import ModelsListParams as ModelsListParams
from ._wire import NodeListParams as NodeListParams
from ._wire import ProgressCardGetParams as ProgressCardGetParams
from ._wire import QuestionListParams as QuestionListParams
from ._wire import SessionsAbortParams as SessionsAbortParams
from ._wire import SessionsBranchesListParams as SessionsBranchesListParams
from ._wire import SessionsCatalogListParams as SessionsCatalogListParams
from ._wire import SessionsCompactParams as SessionsCompactParams
from ._wire import SessionsCompanionStateParams as SessionsCompanionStateParams
from ._wire import SessionsCreateParams as SessionsCreateParams
from ._wire import SessionsDeleteParams as SessionsDeleteParams
from ._wire import SessionsDescribeParams as SessionsDescribeParams
from ._wire import SessionsGroupsListParams as SessionsGroupsListParams
from ._wire import SessionsListParams as SessionsListParams
from ._wire import SessionsMessagesSubscribeParams as SessionsMessagesSubscribeParams
from ._wire import SessionsMessagesUnsubscribeParams as SessionsMessagesUnsubscribeParams
from ._wire import SessionsObserverVisibilityParams as SessionsObserverVisibilityParams
from ._wire import SessionsPatchParams as SessionsPatchParams
from ._wire import SessionsResetParams as SessionsResetParams
from ._wire import SessionsResolveParams as SessionsResolveParams
from ._wire import SessionsSendParams as SessionsSendParams
from ._wire import SkillsStatusParams as SkillsStatusParams
from ._wire import SystemInfoParams as SystemInfoParams
from ._wire import TalkCatalogParams as TalkCatalogParams
from ._wire import TasksListParams as TasksListParams
from ._wire import TaskSuggestionsListParams as TaskSuggestionsListParams
from ._wire import ToolsCatalogParams as ToolsCatalogParams
from ._wire import ToolsEffectiveParams as ToolsEffectiveParams
from ._wire import UpdateStatusParams as UpdateStatusParams
from ._wire import UsersPrefsGetParams as UsersPrefsGetParams
from ._wire import UsersPrefsSetParams as UsersPrefsSetParams
from ._wire import WebSearchStatusParams as WebSearchStatusParams
from ._wire_ext import AgentParams as AgentParams

__all__ = [
    "INVALID_REQUEST",
    "MAX_BUFFERED_BYTES",
    "MAX_PAYLOAD_BYTES",
    "MAX_PREAUTH_PAYLOAD_BYTES",
    "METHOD_SCOPES",
    "NOT_PAIRED",
    "PROTOCOL_VERSION",
    "TICK_INTERVAL_MS",
    "UNAVAILABLE",
    "AgentIdentityParams",
    "AgentParams",
    "AgentWaitParams",
    "AgentsListParams",
    "CancelFrame",
    "ChannelsStatusParams",
    "ChatAbortParams",
    "ChatHistoryParams",
    "ChatInjectParams",
    "ChatMetadataParams",
    "ChatSendParams",
    "ClawlaneError",
    "CommandsListParams",
    "ConfigApplyParams",
    "ConfigGetParams",
    "ConfigPatchParams",
    "ConfigSetParams",
    "ConnectParams",
    "ConnectParamsAuth",
    "ConnectParamsDevice",
    "CronAddParams",
    "CronAddParamsDeliveryAnnounce",
    "CronAddParamsDeliveryWebhook",
    "CronAddParamsPayloadAgentTurn",
    "CronAddParamsScheduleAt",
    "CronListParams",
    "CronRunsParams",
    "CronStatusParams",
    "GatewayError",
    "HooksStatusParams",
    "LogsTailParams",
    "ModelsAuthStatusParams",
    "ModelsListParams",
    "NodeListParams",
    "NonEmpty",
    "ProgressCardGetParams",
    "QuestionListParams",
    "RequestFrame",
    "SessionsAbortParams",
    "SessionsBranchesListParams",
    "SessionsCatalogListParams",
    "SessionsCompactParams",
    "SessionsCompanionStateParams",
    "SessionsCreateParams",
    "SessionsDeleteParams",
    "SessionsDescribeParams",
    "SessionsGroupsListParams",
    "SessionsListParams",
    "SessionsMessagesSubscribeParams",
    "SessionsMessagesUnsubscribeParams",
    "SessionsObserverVisibilityParams",
    "SessionsPatchParams",
    "SessionsResetParams",
    "SessionsResolveParams",
    "SessionsSendParams",
    "SkillsStatusParams",
    "SystemInfoParams",
    "TalkCatalogParams",
    "TaskSuggestionsListParams",
    "TasksListParams",
    "ToolsCatalogParams",
    "ToolsEffectiveParams",
    "UpdateStatusParams",
    "UsersPrefsGetParams",
    "UsersPrefsSetParams",
    "WebSearchStatusParams",
    "decode_inbound",
    "decode_params",
    "describe_exception",
    "encode_event",
    "encode_response",
    "internal_error",
    "invalid_request",
    "missing_scope",
    "operator_scope_satisfied",
    "opt",
    "peek_request_id",
    "role_scopes_allow",
]
