"""OpenClaw 2026.9.6's default redaction patterns (`DEFAULT_REDACT_PATTERNS` of its
`logging/redact-patterns.ts`), as its redaction compiles them: each JavaScript source and
its flags (`gi` unless written as a `/.../flags` literal; `g` left out), in their order.

The marks say how OpenClaw applies a pattern: `pem` is its PEM block scanner (not this
regular expression), `shell` a pattern that leaves a reference to the same variable alone
(`KEY=$KEY`) and masks with `maskToken`, `form` one whose value stops at the next `&key=`,
`whole` one never applied in 16,384-unit chunks to a long text. Taken from the dist's
`getDefaultRedactPatterns()` (`redact-*.mjs`), run under Node 24.
"""

from __future__ import annotations

from typing import Final

__all__ = ["DEFAULT_PATTERNS"]

# fmt: off
DEFAULT_PATTERNS: Final[tuple[tuple[str, str, str], ...]] = (
    ('\\b[A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|CARD[_-]?NUMBER|CARD[_-]?CVC|CARD[_-]?CVV|CVC|CVV|SECURITY[_-]?CODE|PAYMENT[_-]?CREDENTIAL|SHARED[_-]?PAYMENT[_-]?TOKEN)\\b\\s*[=:]\\s*(["\']?)([^\\s"\'\\\\]+)\\1', '', 'shell'),  # 0
    ('\\b[A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|CARD[_-]?NUMBER|CARD[_-]?CVC|CARD[_-]?CVV|CVC|CVV|SECURITY[_-]?CODE|PAYMENT[_-]?CREDENTIAL|SHARED[_-]?PAYMENT[_-]?TOKEN)\\b\\s*[=:]\\s*\\\\+(["\'])([^\\s"\'\\\\]+)\\\\+\\1', '', 'shell'),  # 1
    ('"(?:apiKey|api_key|apiToken|api_token|bearerToken|bearer_token|token|secret|password|passwd|aws[-_]?secret[-_]?access[-_]?key|awsSecretAccessKey|SecretAccessKey|credential|authorization|proxy-authorization|cookie|set-cookie|x-api-key|x-auth-token|accessToken|access_token|refreshToken|refresh_token|idToken|id_token|authToken|auth_token|clientSecret|client_secret|privateKey|private_key|secret_value|raw_secret|secret_input|key_material)"\\s*:\\s*"([^"]+)"', 'i', ''),  # 2
    ('"(?:cardNumber|card_number|cardCvc|card_cvc|cardCvv|card_cvv|cvc|cvv|securityCode|security_code|paymentCredential|payment_credential|sharedPaymentToken|shared_payment_token)"\\s*:\\s*"([^"]+)"', 'i', ''),  # 3
    ('(^|[\\s,{])["\']?(?:api[-_]key|access[-_]token|refresh[-_]token|id[-_]token|authToken|auth[-_]token|clientSecret|client[-_]secret|appSecret|app[-_]secret|private[-_]key|credential|authorization|secret[-_]value|raw[-_]secret|secret[-_]input|key[-_]material)["\']?\\s*[:=]\\s*(["\'])([^"\'\\r\\n]+)\\2', 'i', ''),  # 4
    ('(^|[\\s,{])["\']?(?:authorization|proxy-authorization|cookie|set-cookie|x-api-key|x-auth-token)["\']?\\s*[:=]\\s*(["\'])([^"\'\\r\\n]+)\\2', 'i', ''),  # 5
    ('--(?:aws[-_]?secret[-_]?access[-_]?key|awsSecretAccessKey|SecretAccessKey|api[-_]?key|hook[-_]?token|access[-_]?token|refresh[-_]?token|id[-_]?token|token|secret|password|passwd|credential|private[-_]?key|client[-_]?secret|card[-_]?number|card[-_]?cvc|card[-_]?cvv|cvc|cvv|security[-_]?code|payment[-_]?credential|shared[-_]?payment[-_]?token)=([^\\s"\']+)', 'i', ''),  # 6
    ('--(?:aws[-_]?secret[-_]?access[-_]?key|awsSecretAccessKey|SecretAccessKey|api[-_]?key|hook[-_]?token|access[-_]?token|refresh[-_]?token|id[-_]?token|token|secret|password|passwd|credential|private[-_]?key|client[-_]?secret|card[-_]?number|card[-_]?cvc|card[-_]?cvv|cvc|cvv|security[-_]?code|payment[-_]?credential|shared[-_]?payment[-_]?token)\\s+(?!(?:or|and)\\b(?=\\s+--))(["\']?)([^\\s"\']+)\\1', 'i', ''),  # 7
    ('Authorization(?:\\\\{1,64}["\']|["\']|)[ \\t]*[:=](?:[ \\t\\r\\n]*|[ \\t]*\\\\{1,64}r\\\\{1,64}n(?:[ \\t]*|\\\\{1,64}t)|[ \\t]*\\\\{1,64}n(?:[ \\t]*|\\\\{1,64}t)|[ \\t]*\\\\{1,64}t[ \\t]*)(?:\\\\{1,64}["\']|["\']|)Bearer(?:[ \\t]*\\r?\\n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}r\\\\{1,64}n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}t[ \\t]*|[ \\t]+)((?:\\[REDACTED\\]|[^\\s\\\\"\',;&#?<>)}\\]]+))', 'i', 'whole'),  # 8
    ('Authorization(?:\\\\{1,64}["\']|["\']|)[ \\t]*[:=](?:[ \\t\\r\\n]*|[ \\t]*\\\\{1,64}r\\\\{1,64}n(?:[ \\t]*|\\\\{1,64}t)|[ \\t]*\\\\{1,64}n(?:[ \\t]*|\\\\{1,64}t)|[ \\t]*\\\\{1,64}t[ \\t]*)(?:\\\\{1,64}["\']|["\']|)Basic(?:[ \\t]*\\r?\\n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}r\\\\{1,64}n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}t[ \\t]*|[ \\t]+)((?:\\[REDACTED\\]|[^\\s\\\\"\',;&#?<>)}\\]]+))', 'i', 'whole'),  # 9
    ('Authorization(?:\\\\{1,64}["\']|["\']|)[ \\t]*[:=](?:[ \\t\\r\\n]*|[ \\t]*\\\\{1,64}r\\\\{1,64}n(?:[ \\t]*|\\\\{1,64}t)|[ \\t]*\\\\{1,64}n(?:[ \\t]*|\\\\{1,64}t)|[ \\t]*\\\\{1,64}t[ \\t]*)(?:\\\\{1,64}["\']|["\']|)Bot(?:[ \\t]*\\r?\\n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}r\\\\{1,64}n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}t[ \\t]*|[ \\t]+)((?:\\[REDACTED\\]|[^\\s\\\\"\',;&#?<>)}\\]]+))', 'i', 'whole'),  # 10
    ('(^|[^A-Za-z0-9_-]|\\\\{1,64}[rn])Proxy-Authorization(?:\\\\{1,64}["\']|["\']|)[ \\t]*[:=](?:[ \\t]*\\r?\\n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}r\\\\{1,64}n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}t[ \\t]*|[ \\t]*)(?:\\\\{1,64}["\']|["\']|)[A-Za-z0-9!#$%&\'*+.^_`|~-]+(?:[ \\t]*\\r?\\n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}r\\\\{1,64}n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}t[ \\t]*|[ \\t]+)((?:\\[REDACTED\\]|[^\\s\\\\"\',;&#?<>)}\\]]+))', 'i', 'whole'),  # 11
    ('(^|[^A-Za-z0-9_-]|\\\\{1,64}[rn])Proxy-Authorization(?:\\\\{1,64}["\']|["\']|)[ \\t]*[:=](?:[ \\t]*\\r?\\n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}r\\\\{1,64}n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}t[ \\t]*|[ \\t]*)(?:\\\\{1,64}["\']|["\']|)((?:\\[REDACTED\\]|[^\\s\\\\"\',;&#?<>)}\\]]+))[ \\t]*(?=(?:\\\\{1,64}["\']|["\']|)(?:$|[,;)}\\]]|\\r?\\n(?![ \\t])))', 'i', 'whole'),  # 12
    ('(^|[^A-Za-z0-9_-]|\\\\{1,64}[rn])Authorization(?:\\\\{1,64}["\']|["\']|)[ \\t]*[:=](?:[ \\t]*\\r?\\n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}r\\\\{1,64}n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}t[ \\t]*|[ \\t]*)(?:\\\\{1,64}["\']|["\']|)(?!(?:Bearer|Basic|Bot)(?=(?:[ \\t]*\\r?\\n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}r\\\\{1,64}n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}t[ \\t]*|[ \\t]+)))[A-Za-z0-9!#$%&\'*+.^_`|~-]+(?:[ \\t]*\\r?\\n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}r\\\\{1,64}n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}t[ \\t]*|[ \\t]+)((?:\\[REDACTED\\]|[^\\s\\\\"\',;&#?<>)}\\]]+))', 'i', 'whole'),  # 13
    ('(^|[^A-Za-z0-9_-]|\\\\{1,64}[rn])Authorization(?:\\\\{1,64}["\']|["\']|)[ \\t]*[:=](?:[ \\t]*\\r?\\n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}r\\\\{1,64}n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}t[ \\t]*|[ \\t]*)(?:\\\\{1,64}["\']|["\']|)(?!(?:Bearer|Basic|Bot)(?=(?:[ \\t]*\\r?\\n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}r\\\\{1,64}n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}t[ \\t]*|[ \\t]+)))((?:\\[REDACTED\\]|[^\\s\\\\"\',;&#?<>)}\\]]+))[ \\t]*(?=(?:\\\\{1,64}["\']|["\']|)(?:$|[,;)}\\]]|\\r?\\n(?![ \\t])))', 'i', 'whole'),  # 14
    ('(^|[^A-Za-z0-9_?&-]|\\\\{1,64}[rn])(?:x-goog-api-key|api-key|apikey|x-api-token|x-access-token)(?:\\\\{1,64}["\']|["\']|)[ \\t]*:(?:[ \\t]*\\r?\\n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}r\\\\{1,64}n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}t[ \\t]*|[ \\t]*)(?:\\\\{1,64}["\']|["\']|)([^\\s\\\\"\',;]+)', 'i', 'whole'),  # 15
    ('(^|[^A-Za-z0-9_?&-]|\\\\{1,64}[rn])(?:x-goog-api-key|api-key|apikey|x-api-token|x-access-token)(?:\\\\{1,64}["\']|["\']|)[ \\t]*=(?:[ \\t]*\\r?\\n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}r\\\\{1,64}n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}n(?:[ \\t]+|\\\\{1,64}t)|[ \\t]*\\\\{1,64}t[ \\t]*|[ \\t]*)(?:\\\\{1,64}["\']|["\']|)([^\\s\\\\"\',;]+)', 'i', 'form whole'),  # 16
    ('(^|[^A-Za-z0-9_?&-]|\\\\{1,64}[rn])(?:X-OpenClaw-Token|x-pomerium-jwt-assertion|X-Api-Key|X-Auth-Token)\\s*:\\s*([^\\s"\',;]+)', 'i', ''),  # 17
    ('(^|[^A-Za-z0-9_?&-]|\\\\{1,64}[rn])(?:X-OpenClaw-Token|x-pomerium-jwt-assertion|X-Api-Key|X-Auth-Token)\\s*=\\s*([^\\s"\',;]+)', 'i', 'form'),  # 18
    ('\\bBearer\\s+([-A-Za-z0-9._~+/=]{18,})(?![-A-Za-z0-9._~+/=])', 'i', 'whole'),  # 19
    ('\\b(?:https?|wss?|ftp):\\/\\/[^\\/\\s:@]*:([^\\/\\s@]+)@', 'i', ''),  # 20
    ('\\b(?:postgres(?:ql)?|mysql|mongodb(?:\\+srv)?|rediss?|amqps?):\\/\\/[^:\\s/@]*:([^@\\s]+)@', 'i', ''),  # 21
    ('(^|[\\s,;])(?:access[-_]?token|auth[-_]?token|hook[-_]?token|refresh[-_]?token|id[-_]?token|api[-_]?key|apikey|client[-_]?secret|app[-_]?secret|private[-_]?key|aws[-_]?secret[-_]?access[-_]?key|awsSecretAccessKey|SecretAccessKey|credential|authorization|token|key|secret|password|pass|passwd|auth|jwt|session|code|signature|x[-_]?amz[-_]?(?:signature|security[-_]?token)|app[-_]?secret|credential|card[-_]?number|card[-_]?cvc|card[-_]?cvv|cvc|cvv|security[-_]?code|payment[-_]?credential|shared[-_]?payment[-_]?token)=([^&\\s]+)(?=&[A-Za-z_][A-Za-z0-9_.-]*=)', 'i', ''),  # 22
    ('(^|[\\s,;({\\["])(?:access_token|refresh_token|id_token|auth[-_]?token|hook[-_]?token|api[-_]?key|client[-_]?secret|app[-_]?secret|private[-_]?key|authorization|jwt|token|secret|password|pass|passwd|credential|card[-_]?number|card[-_]?cvc|card[-_]?cvv|cvc|cvv|security[-_]?code|payment[-_]?credential|shared[-_]?payment[-_]?token)=(["\'\\x60])((?:(?!\\2)[^\\r\\n])+)\\2', 'i', 'shell'),  # 23
    ('(^|[\\s,;({\\["])(?:access_token|refresh_token|id_token|auth[-_]?token|hook[-_]?token|api[-_]?key|client[-_]?secret|app[-_]?secret|private[-_]?key|authorization|jwt|token|secret|password|pass|passwd|credential|card[-_]?number|card[-_]?cvc|card[-_]?cvv|cvc|cvv|security[-_]?code|payment[-_]?credential|shared[-_]?payment[-_]?token)=(["\'\\x60]?[^\\s&#"\'\\x60<>]+)', 'i', 'shell'),  # 24
    ('(^|[\\s,{])(?:(?:access[-_]?token|refresh[-_]?token|id[-_]?token|auth[-_]?token|hook[-_]?token|api[-_]?(?:key|secret)|secret[-_]?key|key[-_]?material|authorization|jwt|token|secret|password|passphrase|pass|passwd|card[-_]?number|card[-_]?cvc|card[-_]?cvv|cvc|cvv|security[-_]?code|payment[-_]?credential|shared[-_]?payment[-_]?token)(?:\\s*:\\s*|\\s+=\\s*|=\\s*)|[a-z0-9][a-z0-9._-]{0,79}[-_](?:password|passphrase|pass|passwd)\\s*[:=]\\s*|[a-z0-9_.-]{1,80}\\.(?:access[-_]?token|refresh[-_]?token|id[-_]?token|auth[-_]?token|hook[-_]?token|api[-_]?(?:key|secret)|client[-_]?secret|app[-_]?secret|private[-_]?key|secret[-_]?key|key[-_]?material|authorization|jwt|token|secret|password|passphrase|pass|passwd|credential|card[-_]?number|card[-_]?cvc|card[-_]?cvv|cvc|cvv|security[-_]?code|payment[-_]?credential|shared[-_]?payment[-_]?token)\\s*[:=]\\s*)(["\'\\x60])((?:(?!\\2)[^\\r\\n])+)\\2', '', ''),  # 25
    ('(^|[\\s,{])(?:access[-_]?token|refresh[-_]?token|id[-_]?token|auth[-_]?token|hook[-_]?token|api[-_]?(?:key|secret)|client[-_]?secret|app[-_]?secret|private[-_]?key|secret[-_]?key|key[-_]?material|authorization|jwt|token|secret|password|passphrase|pass|passwd|credential|card[-_]?number|card[-_]?cvc|card[-_]?cvv|cvc|cvv|security[-_]?code|payment[-_]?credential|shared[-_]?payment[-_]?token)(?:\\s*:\\s*|\\s+=\\s*|=\\s+)([^\\s#"\'\\x60<>]+)', '', ''),  # 26
    ('(^|[\\s,{])(?:access-token|refresh-token|id-token|auth-token|hook-token|api[-_]?(?:key|secret)|secret[-_]?key|key[-_]?material|passphrase)=([^\\s#"\'\\x60<>]+)', '', ''),  # 27
    ('(^|[\\s,{])[a-z0-9][a-z0-9._-]{0,79}[-_](?:password|passphrase|pass|passwd)\\s*[:=]\\s*([^\\s#"\'\\x60<>]+)', '', ''),  # 28
    ('(^|[\\s,{])[a-z0-9_.-]{1,80}\\.(?:access[-_]?token|refresh[-_]?token|id[-_]?token|auth[-_]?token|hook[-_]?token|api[-_]?(?:key|secret)|client[-_]?secret|app[-_]?secret|private[-_]?key|secret[-_]?key|key[-_]?material|authorization|jwt|token|secret|password|passphrase|pass|passwd|credential|card[-_]?number|card[-_]?cvc|card[-_]?cvv|cvc|cvv|security[-_]?code|payment[-_]?credential|shared[-_]?payment[-_]?token)\\s*[:=]\\s*([^\\s#"\'\\x60<>]+)', '', ''),  # 29
    ('-----BEGIN [A-Z ]*PRIVATE KEY-----[\\s\\S]+?-----END [A-Z ]*PRIVATE KEY-----', 'i', 'pem'),  # 30
    ('(^|[\\s,{])["\']?(?:aws[-_]?secret[-_]?access[-_]?key|awsSecretAccessKey|SecretAccessKey)["\']?\\s*[:=]\\s*(["\']?)([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])\\2', 'i', ''),  # 31
    ('\\b(sk-[A-Za-z0-9_-]{8,})\\b', 'i', ''),  # 32
    ('(ghp_[A-Za-z0-9]{10,})', 'i', ''),  # 33
    ('(github_pat_[A-Za-z0-9_]{10,})', 'i', ''),  # 34
    ('(gho_[A-Za-z0-9]{10,})', 'i', ''),  # 35
    ('(ghu_[A-Za-z0-9]{10,})', 'i', ''),  # 36
    ('(ghs_[A-Za-z0-9]{10,})', 'i', ''),  # 37
    ('(ghr_[A-Za-z0-9]{10,})', 'i', ''),  # 38
    ('(glpat-[A-Za-z0-9._=\\-]{20,})', 'i', ''),  # 39
    ('(gloas-(?:[A-Fa-f0-9]{65,}|[A-Za-z0-9_-]{64}|[A-Fa-f0-9]{32,}))', 'i', ''),  # 40
    ('(gldt-[A-Za-z0-9_-]{20,})', 'i', ''),  # 41
    ('(glcbt-[A-Za-z0-9]{1,5}_[A-Za-z0-9_-]{20,})', 'i', ''),  # 42
    ('(glptt-[A-Za-z0-9_-]{40,})', 'i', ''),  # 43
    ('(glft-(?:[A-Za-z0-9_-]{20,}|[a-h0-9]+-[0-9]+_))', 'i', ''),  # 44
    ('(glimt-[A-Za-z0-9_-]{25,})', 'i', ''),  # 45
    ('(glagent-[A-Za-z0-9_-]{50,})', 'i', ''),  # 46
    ('(glwt-[A-Za-z0-9_-]{20,})', 'i', ''),  # 47
    ('(glsoat-[A-Za-z0-9_-]{20,})', 'i', ''),  # 48
    ('(glffct-[A-Za-z0-9_-]{20,})', 'i', ''),  # 49
    ('(glrt-[A-Za-z0-9._-]{20,})', 'i', ''),  # 50
    ('(glrtr?-[A-Za-z0-9_-]{27,300}\\.[0-9a-z]{2}\\.[0-9a-z]{9})', 'i', ''),  # 51
    ('(GR1348941[A-Za-z0-9_-]{20,})', 'i', ''),  # 52
    ('(_gitlab_session=[A-Za-z0-9%._-]{20,})', 'i', ''),  # 53
    ('(xox[baprs]-[A-Za-z0-9-]{10,})', 'i', ''),  # 54
    ('(xapp-[A-Za-z0-9-]{10,})', 'i', ''),  # 55
    ('(https:\\/\\/hooks\\.slack\\.com\\/(?:services\\/T[A-Z0-9]+\\/B[A-Z0-9]+|workflows\\/T[A-Z0-9]+\\/A[A-Z0-9]+\\/[0-9]{17,19})\\/[A-Za-z0-9]{20,})', 'i', ''),  # 56
    ('(https:\\/\\/discord(?:app)?\\.com\\/api\\/webhooks\\/[0-9]{17,20}\\/[A-Za-z0-9_-]{60,})', 'i', ''),  # 57
    ('discord(?:.|\\n|\\r){0,40}?\\b([A-Za-z0-9_-]{24}\\.[A-Za-z0-9_-]{6}\\.[A-Za-z0-9_-]{27})\\b', 'i', ''),  # 58
    ('(gsk_[A-Za-z0-9_-]{10,})', 'i', ''),  # 59
    ('(AIza[0-9A-Za-z\\-_]{20,})', 'i', ''),  # 60
    ('(ya29\\.[0-9A-Za-z_\\-./+=]{10,})', 'i', ''),  # 61
    ('(1//0[0-9A-Za-z_\\-./+=]{10,})', 'i', ''),  # 62
    ('(eyJ[A-Za-z0-9_-]{10,}\\.[A-Za-z0-9_-]{10,}\\.[A-Za-z0-9_-]{10,})', 'i', ''),  # 63
    ('(pplx-[A-Za-z0-9_-]{10,})', 'i', ''),  # 64
    ('(fal_[A-Za-z0-9_-]{10,})', 'i', ''),  # 65
    ('(^|[^A-Za-z0-9_])(fc-[A-Za-z0-9]{10,})', 'i', 'whole'),  # 66
    ('(bb_live_[A-Za-z0-9_-]{10,})', 'i', ''),  # 67
    ('(^|[^A-Za-z0-9])(?<!;base64,[A-Za-z0-9+/=]*)(gAAAA[A-Za-z0-9_=-]{20,})', 'i', 'whole'),  # 68
    ('(sk_live_[A-Za-z0-9]{10,})', 'i', ''),  # 69
    ('(sk_test_[A-Za-z0-9]{10,})', 'i', ''),  # 70
    ('(rk_live_[A-Za-z0-9]{10,})', 'i', ''),  # 71
    ('(SG\\.[A-Za-z0-9_-]{10,}\\.[A-Za-z0-9_-]{10,})', 'i', ''),  # 72
    ('(npm_[A-Za-z0-9]{10,})', 'i', ''),  # 73
    ('(pypi-[A-Za-z0-9_-]{10,})', 'i', ''),  # 74
    ('(dop_v1_[A-Za-z0-9]{10,})', 'i', ''),  # 75
    ('(doo_v1_[A-Za-z0-9]{10,})', 'i', ''),  # 76
    ('(dor_v1_[A-Za-z0-9]{10,})', 'i', ''),  # 77
    ('(dp\\.(?:ct|pt|sa|scim|audit)\\.[A-Za-z0-9]{40,44})', 'i', ''),  # 78
    ('(dp\\.st\\.[A-Za-z0-9]{40,44})', 'i', ''),  # 79
    ('(dp\\.st\\.[a-z0-9_-]{2,35}\\.[A-Za-z0-9]{40,44})', 'i', ''),  # 80
    ('(dckr_(?:pat|oat)_[A-Za-z0-9_-]{27,32})', 'i', ''),  # 81
    ('(bkua_[a-z0-9]{40})', 'i', ''),  # 82
    ('(CCIPAT_[A-Za-z0-9]{22}_[A-Fa-f0-9]{40})', 'i', ''),  # 83
    ('(sbp_[a-z0-9]{40})', 'i', ''),  # 84
    ('(^|[^A-Za-z0-9])(?<!;base64,[A-Za-z0-9+/=]*)(dapi[0-9a-f]{32}(?:-\\d)?)', 'i', 'whole'),  # 85
    ('(dd[pw]_[A-Za-z0-9]{36})', 'i', ''),  # 86
    ('(glsa_[A-Za-z0-9_]{41})', 'i', ''),  # 87
    ('(glc_eyJ[A-Za-z0-9+/=]{60,160})', 'i', ''),  # 88
    ('(nfp_[A-Za-z0-9_]{36})', 'i', ''),  # 89
    ('(CFPAT-[A-Za-z0-9_\\-]{40,})', 'i', ''),  # 90
    ('(^|[^A-Za-z0-9])(?<!;base64,[A-Za-z0-9+/=]*)(ATCTT3xFfG[A-Za-z0-9+/=_-]+=[A-Za-z0-9]{8})', 'i', 'whole'),  # 91
    ('(^|[^A-Za-z0-9])(?<!;base64,[A-Za-z0-9+/=]*)(ATATT[A-Za-z0-9+/=_-]+=[A-Za-z0-9]{8})', 'i', 'whole'),  # 92
    ('(^|[^A-Za-z0-9])(?<!;base64,[A-Za-z0-9+/=]*)(ATBB[A-Za-z0-9_=.-]{16,})', 'i', 'whole'),  # 93
    ('(BBDC-[A-Za-z0-9+/@_-]{40,50})', 'i', ''),  # 94
    ('(HRKU-AA[A-Za-z0-9_-]{20,})', 'i', ''),  # 95
    ('(pat-(?:eu|na)1-[A-Za-z0-9]{8}\\-[A-Za-z0-9]{4}\\-[A-Za-z0-9]{4}\\-[A-Za-z0-9]{4}\\-[A-Za-z0-9]{12})', 'i', ''),  # 96
    ('(apify_api_[A-Za-z0-9\\-]{20,})', 'i', ''),  # 97
    ('(FlyV1 fm\\d+_[A-Za-z0-9+/=,_-]{100,})', 'i', ''),  # 98
    ('(fio-u-[A-Za-z0-9_-]{40,})', 'i', ''),  # 99
    ('(^|[^A-Za-z0-9_])(am_[A-Za-z0-9_-]{10,})', 'i', 'whole'),  # 100
    ('(^|[^A-Za-z0-9_])(sk_[A-Za-z0-9_]{10,})', 'i', 'whole'),  # 101
    ('(tvly-[A-Za-z0-9]{10,})', 'i', ''),  # 102
    ('(exa_[A-Za-z0-9]{10,})', 'i', ''),  # 103
    ('(syt_[A-Za-z0-9]{10,})', 'i', ''),  # 104
    ('(retaindb_[A-Za-z0-9]{10,})', 'i', ''),  # 105
    ('(hsk-[A-Za-z0-9]{10,})', 'i', ''),  # 106
    ('(mem0_[A-Za-z0-9]{10,})', 'i', ''),  # 107
    ('(brv_[A-Za-z0-9]{10,})', 'i', ''),  # 108
    ('(xai-[A-Za-z0-9]{30,})', 'i', ''),  # 109
    ('(^|[^A-Za-z0-9_])(fw-[A-Za-z0-9]{30,})', 'i', 'whole'),  # 110
    ('(^|[^A-Za-z0-9_])(fw_[A-Za-z0-9]{30,})', 'i', 'whole'),  # 111
    ('(^|[^A-Za-z0-9_])(fpk_[A-Za-z0-9]{30,})', 'i', 'whole'),  # 112
    ('(^|[^A-Za-z0-9])(?<!;base64,[A-Za-z0-9+/=]*)(AKIA[A-Z0-9]{16})', 'i', 'whole'),  # 113
    ('(^|[^A-Za-z0-9])(?<!;base64,[A-Za-z0-9+/=]*)(ASIA[A-Z0-9]{16})', 'i', 'whole'),  # 114
    ('(AKID[A-Za-z0-9]{10,})', 'i', ''),  # 115
    ('(LTAI[A-Za-z0-9]{10,})', 'i', ''),  # 116
    ('(hf_[A-Za-z0-9]{10,})', 'i', ''),  # 117
    ('(api_org_[A-Za-z0-9]{20,})', 'i', ''),  # 118
    ('(r8_[A-Za-z0-9]{10,})', 'i', ''),  # 119
    ('\\bbot(\\d{6,}:[A-Za-z0-9_-]{20,})\\b', 'i', 'whole'),  # 120
    ('\\b(\\d{6,}:[A-Za-z0-9_-]{20,})\\b', 'i', 'whole'),  # 121
)
# fmt: on
