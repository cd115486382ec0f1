"""runtime.devices"""

from ._device_auth import DeviceIdentity as DeviceIdentity
from ._device_auth import DeviceProof as DeviceProof
from ._device_auth import DeviceProofFailure as DeviceProofFailure
from ._device_auth import SignedFields as SignedFields
from ._device_auth import normalize_device_metadata as normalize_device_metadata
from ._device_auth import verify_device_proof as verify_device_proof
from ._pairing import Approved as Approved
from ._pairing import DeviceToken as DeviceToken
from ._pairing import PairingInput as PairingInput
from ._pairing import PairingStore as PairingStore
from ._pairing import PairingStoreError as PairingStoreError
from ._pairing import PendingRequest as PendingRequest
from ._pairing import TokenRefused as TokenRefused
from ._pairing import open_pairing_store as open_pairing_store
from ._sharing import DocumentVersion as DocumentVersion
from ._sharing import FileDocument as FileDocument
from ._sharing import SharedDocument as SharedDocument

__all__ = [
    "Approved",
    "DeviceIdentity",
    "DeviceProof",
    "DeviceProofFailure",
    "DeviceToken",
    "DocumentVersion",
    "FileDocument",
    "PairingInput",
    "PairingStore",
    "PairingStoreError",
    "PendingRequest",
    "SharedDocument",
    "SignedFields",
    "TokenRefused",
    "normalize_device_metadata",
    "open_pairing_store",
    "verify_device_proof",
]
