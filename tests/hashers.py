"""The tests' password hasher: Argon2id, as deployed, at its smallest cost; and the deployed
hash, for the servers a test starts under the deployed settings."""

from django.contrib.auth.hashers import Argon2PasswordHasher


class QuickArgon2PasswordHasher(Argon2PasswordHasher):
    """Argon2id with the deployed hasher's name and format, at a cost of milliseconds."""

    time_cost = 1
    memory_cost = 64
    parallelism = 1


def deployed_hash(password: str) -> str:
    """`password` hashed at the deployed cost. A server under the deployed settings takes a
    quick hash too, but hashes it again at its first sign-in, which is a new password to it: the
    tokens and sessions of before would end."""
    hasher = Argon2PasswordHasher()
    return hasher.encode(password, hasher.salt())
