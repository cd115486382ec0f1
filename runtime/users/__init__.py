"""runtime.users: what the gateway keeps for the people using it (the Control UI's
preferences)."""

from ._prefs import MAX_PREFS_BYTES as MAX_PREFS_BYTES
from ._prefs import PREFS_RELATIVE_PATH as PREFS_RELATIVE_PATH
from ._prefs import PrefsTooLarge as PrefsTooLarge
from ._prefs import UserPrefs as UserPrefs
from ._prefs import UserPrefsError as UserPrefsError
from ._prefs import open_user_prefs as open_user_prefs

__all__ = [
    "MAX_PREFS_BYTES",
    "PREFS_RELATIVE_PATH",
    "PrefsTooLarge",
    "UserPrefs",
    "UserPrefsError",
    "open_user_prefs",
]
