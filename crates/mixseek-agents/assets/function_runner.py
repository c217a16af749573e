"""mixseek: runs one workflow function executor (the original MixSeek's contract).

Started as `python -c <this file> SPEC`, SPEC being JSON:
  {"module": str|null, "path": str|null, "function": str, "timeout": int|null}

stdout carries the protocol only (whatever the function prints goes to stderr):
  1. one line: {"built": true} or {"built": false, "error": "..."}
  2. stdin is read to its end: the input string (UTF-8)
  3. one line: {"status": "SUCCESS", "content": "..."}
           or {"status": "ERROR", "error": "...", "timed_out": false|true}
Then the process exits at once, so a timed-out function is really stopped.
"""

import asyncio
import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import sys
import threading
from pathlib import Path

_proto = os.fdopen(os.dup(1), "w", encoding="utf-8", errors="replace")
os.dup2(2, 1)
sys.stdout = sys.stderr


def _send(obj):
    _proto.write(json.dumps(obj, ensure_ascii=True) + "\n")
    _proto.flush()


def _load_module_from_path(path):
    path_obj = Path(path)
    if not path_obj.is_file():
        raise ValueError(
            f"Failed to load function from path '{path}'. "
            f"FileNotFoundError: File not found or is not a regular file. Check file path in TOML config."
        )
    path_hash = hashlib.sha256(str(path_obj.resolve()).encode()).hexdigest()[:16]
    module_name = f"custom_function_{path_hash}"
    spec = importlib.util.spec_from_file_location(module_name, path_obj)
    if spec is None or spec.loader is None:
        raise ValueError(f"Failed to create module spec from path '{path}'.")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = mod
    try:
        spec.loader.exec_module(mod)
    except Exception as e:
        sys.modules.pop(module_name, None)
        raise ValueError(f"Failed to execute module from path '{path}': {e}") from e
    return mod


def _load_function(module, path, function):
    if module is not None and path is not None:
        raise ValueError("Cannot specify both 'module' and 'path' (mutually exclusive)")
    if path is not None:
        mod = _load_module_from_path(path)
        source_label = f"path '{path}'"
    elif module is not None:
        try:
            mod = importlib.import_module(module)
        except ImportError as e:
            raise ValueError(f"Failed to import module '{module}': {e}") from e
        source_label = f"module '{module}'"
    else:
        raise ValueError("Either 'module' or 'path' must be specified")
    if not hasattr(mod, function):
        raise ValueError(f"{source_label.capitalize()} has no attribute '{function}'")
    fn = getattr(mod, function)
    if not callable(fn):
        raise ValueError(f"'{function}' in {source_label} is not callable")
    return fn


def _main():
    spec = json.loads(sys.argv[1])
    try:
        fn = _load_function(spec.get("module"), spec.get("path"), spec["function"])
    except Exception as e:
        _send({"built": False, "error": str(e)})
        return
    _send({"built": True})
    data = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    result = {}

    def call():
        try:
            if inspect.iscoroutinefunction(fn):
                value = asyncio.run(fn(data))
            else:
                value = fn(data)
            result["content"] = str(value)
        except BaseException as e:
            result["error"] = str(e)

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(spec.get("timeout"))
    if worker.is_alive():
        timeout = spec.get("timeout")
        _send({"status": "ERROR", "error": f"function timed out after {timeout}s", "timed_out": True})
    elif "error" in result:
        _send({"status": "ERROR", "error": result["error"], "timed_out": False})
    else:
        _send({"status": "SUCCESS", "content": result.get("content", "")})


try:
    _main()
except BaseException:
    import traceback

    traceback.print_exc()
finally:
    sys.stderr.flush()
    os._exit(0)
