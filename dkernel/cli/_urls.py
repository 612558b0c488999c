"""Stores and models at URLs on the command line: which flags take one, their --storage-option flags, and the
object store's failures (no credentials, an endpoint that does not answer, a refused access) told in one line that
names the flag, before any work where it can be.
"""

URL_FLAGS = {"gram": (("--out", "out"),), "info": (("PATH", "store"),), "verify": (("PATH", "store"),),
             "center": (("PATH", "store"), ("--out", "out")), "align": (("PATH", "store"),),
             "adapt": (("PATH", "store"), ("--out", "out")),
             "fit": (("--model", "model"), ("--store", "store"), ("--checkpoint", "checkpoint")),
             "predict": (("--model", "model"),)}


def _urls(args):
    """``(flag, url)`` of the command's path flags whose value is a URL."""
    return [(flag, getattr(args, name, None)) for flag, name in URL_FLAGS.get(args.command, ())
            if _is_url(getattr(args, name, None))]


def _check_urls(args):
    """Reach every URL of the command (one listing of its prefix) before any work: missing credentials, an endpoint
    that does not answer or a refused access are told with the flag and the URL."""
    from .._runtime.object_store import entries, filesystem

    for flag, url in _urls(args):
        options = dict(_storage_options(args) or {})
        if url.startswith(("s3://", "s3a://")) and "config_kwargs" not in options:
            options["config_kwargs"] = {"retries": {"max_attempts": 2, "mode": "standard"}}  # a check: fail fast
        try:
            fs, root = filesystem(url, options)
            entries(fs, root)
        except Exception as exc:  # noqa: BLE001 (what the filesystem raises: told in words, else raised as it is)
            message = object_store_message(exc, flag, url, _storage_options(args))
            if message is None:
                raise
            raise ValueError(message) from None


def _chain(exc):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def object_store_message(exc, flag, url, storage_options=None):
    """The one line of ``exc``, raised by the filesystem of ``url`` (given with ``flag``), in words with the fix;
    None when it is no failure of an object store. botocore is not imported: its errors are told by their class."""
    options = storage_options or {}
    for error in _chain(exc):
        name, module = type(error).__name__, type(error).__module__ or ""
        detail = " ".join(str(error).split())
        if name in ("NoCredentialsError", "PartialCredentialsError", "CredentialRetrievalError"):
            return (f"{flag} {url}: no credentials for the object store; pass --storage-option key=... "
                    f"--storage-option secret=..., or set the environment variables AWS_ACCESS_KEY_ID and "
                    f"AWS_SECRET_ACCESS_KEY.")
        if module.startswith("aiohttp"):
            return f"{flag} {url}: cannot reach it ({detail}); check the URL."
        if name in ("EndpointConnectionError", "ConnectTimeoutError", "ReadTimeoutError", "ConnectionClosedError",
                    "ProxyConnectionError"):
            where = options.get("endpoint_url")
            where = f"its endpoint {where}" if where else "its endpoint"
            return (f"{flag} {url}: cannot reach {where} ({detail}); check the URL and --storage-option "
                    f"endpoint_url=http://HOST:PORT.")
        if module.startswith(("botocore", "aiobotocore", "s3fs")):
            return (f"{flag} {url}: the object store refused the request ({name}: {detail}); check the bucket and "
                    f"the credentials (--storage-option key=... secret=..., or AWS_ACCESS_KEY_ID).")
    if isinstance(exc, PermissionError):
        return (f"{flag} {url}: access denied ({' '.join(str(exc).split())}); check the bucket and the credentials "
                f"(--storage-option key=... secret=..., or AWS_ACCESS_KEY_ID).")
    if isinstance(exc, ImportError):
        return f"{flag} {url}: {' '.join(str(exc).split())}"
    if isinstance(exc, ValueError) and "protocol" in str(exc).lower():
        return f"{flag} {url}: not a URL of a known filesystem ({' '.join(str(exc).split())})."
    if isinstance(exc, OSError) and not isinstance(exc, FileNotFoundError):
        return f"{flag} {url}: cannot reach it ({' '.join(str(exc).split())}); check the URL."
    return None


def url_failure(exc, args):
    """The line of ``exc`` raised mid-way by the object store of one of the command's URLs; None if it is not one."""
    if args is None:
        return None
    urls = _urls(args)
    if not urls:
        return None
    flag, url = next(((flag, url) for flag, url in urls if url.split("://", 1)[-1].rstrip("/") in str(exc)), urls[0])
    try:
        options = _storage_options(args)
    except ValueError:
        options = None
    if not any(type(e).__module__.startswith(("botocore", "aiobotocore", "aiohttp", "s3fs")) for e in _chain(exc)):
        return None
    return object_store_message(exc, flag, url, options)


#: What --storage-option takes, for the help of every command that reads or writes a store or model at a URL.
STORAGE_OPTION_HELP = ("an option of the filesystem of a URL store or model (s3://...), KEY=VALUE, repeatable: "
                       "endpoint_url=http://HOST:9000, key=..., secret=..., client_kwargs={\"region_name\": \"...\"} "
                       "(a VALUE in {...}, [...], true, false or null is read as JSON). Credentials are better left "
                       "to the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY); given here they are used, "
                       "never printed nor written")


def _add_storage_option_argument(group):
    """--storage-option KEY=VALUE (repeatable): the ``storage_options`` of a store or model at a URL."""
    group.add_argument("--storage-option", dest="storage_option", action="append", default=None,
                       metavar="KEY=VALUE", help=STORAGE_OPTION_HELP)


def _storage_options(args):
    """The ``storage_options`` dict of the --storage-option flags (None without any); a malformed one is refused.

    A message never shows a value: it may be a credential.
    """
    import json

    given = getattr(args, "storage_option", None)
    if not given:
        return None
    options = {}
    for item in given:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            shown = f" (key {key!r})" if sep and key else ""
            raise ValueError(f"--storage-option: expected KEY=VALUE with KEY a name such as endpoint_url{shown}; "
                             f"the value given is not shown, it may hold a credential.")
        if value[:1] in ("{", "[") or value in ("true", "false", "null"):
            try:
                value = json.loads(value)
            except ValueError:
                raise ValueError(f"--storage-option {key}=...: the value starts as JSON but is not valid JSON; "
                                 f"quote it for the shell, e.g. {key}='{{\"name\": \"value\"}}'.") from None
        if key in options:
            raise ValueError(f"--storage-option {key} is given twice; give each key once.")
        options[key] = value
    return options


def _is_url(path):
    """Whether ``path`` (of a store or model flag) is a URL of an fsspec filesystem (``s3://...``)."""
    from .._runtime.object_store import is_url

    return is_url(path)
