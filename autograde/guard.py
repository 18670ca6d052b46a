"""Kernel-side guard against tampering with what the course's tests rely on.

Runs inside the student's kernel. `install()` is executed by the kernel's start-up lines, before any
student code, and takes a snapshot of: builtins, the functions and classes of the protected
packages (numpy, torch, helpers ... imported then), the interpreter hooks (stdout/stderr,
displayhook, excepthook, trace/profile functions) and IPython's error and input machinery.

Each graded test cell is not sent as written: the grader sends `run_test(...)`, which
1. puts back everything in the snapshot that a student cell replaced (and reports what it was),
2. re-runs the instructor's own import and def/class statements (from the gradebook, not from the
   submission), so a student cannot rebind `np` or redefine a test helper,
3. runs the test source with the restored builtins, and only if it finished without raising,
4. prints a per-run random token on the snapshot stdout. The grader awards a test's points only
   when that token is there, the kernel replied "ok" and no error was shown: swallowing the
   exception, faking an "ok" reply or printing "All tests passed" does not earn points.

This is a guard against the tampering a submission can do with ordinary Python, not a security
boundary: code written against this module's internals (it runs in the same process) can forge
the token. The process isolation that does hold is in sandbox.py.
"""
import builtins
import json
import sys
import types

# Resolve this module's builtins from a private copy taken at import time (before any student
# code runs), so a patched `vars`, `setattr` or `callable` cannot blind the restore below.
__builtins__ = dict(vars(builtins))
_state = {}
# ipykernel rebinds input() for every request; `_` names hold the last results.
_IGNORED_BUILTINS = {"_", "__", "___", "input", "raw_input"}
_CODE_TYPES = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type,
               types.ModuleType, staticmethod, classmethod, property, types.WrapperDescriptorType,
               types.MethodDescriptorType, types.MethodWrapperType)
_SYS_HOOKS = ("stdout", "stderr", "displayhook", "breakpointhook")  # IPython swaps excepthook


def _is_code(value):
    return isinstance(value, _CODE_TYPES) or callable(value)


def _protected_name(name, packages):
    return any(name == p or name.startswith(p + ".") for p in packages)


# Classes whose methods are checked too. Not every class: libraries legitimately patch their own
# (torch wraps Optimizer.step on first use, transformers adds Module.smart_apply).
PROTECTED_CLASSES = {"torch.Tensor"}


def _snapshot_module(module):
    entries = {}
    classes = {}
    for key, value in list(vars(module).items()):
        if _is_code(value):
            entries[key] = value
        if isinstance(value, type) and f"{module.__name__}.{key}" in PROTECTED_CLASSES:
            try:
                classes[value] = dict(vars(value))
            except TypeError:
                pass
    return entries, classes


def import_modules(names):
    """Import `names` ("pkg.*": the package and its modules, not its subpackages)."""
    import importlib
    import pkgutil
    for name in names:
        modules = [name.removesuffix(".*")]
        if name.endswith(".*"):
            try:
                package = importlib.import_module(modules[0])
                modules += [f"{modules[0]}.{info.name}" for info in pkgutil.iter_modules(package.__path__)
                            if not info.ispkg and info.name != "__main__"]
            except Exception:
                pass
        for module_name in modules:
            try:
                module = importlib.import_module(module_name)
                for public in getattr(module, "__all__", ()) if name.endswith(".*") else ():
                    getattr(module, public, None)  # a lazy package (helpers) binds its names now
            except Exception:  # a missing optional module is not the guard's business
                pass


def install(packages=("builtins",), preload=()):
    """Snapshot the trusted state. Called once, before any student code runs."""
    from IPython import get_ipython

    import_modules(preload)
    shell = get_ipython()
    modules = {}
    for name, module in list(sys.modules.items()):
        if isinstance(module, types.ModuleType) and name != "builtins" and _protected_name(name, packages):
            modules[name] = (module, *_snapshot_module(module))
    shell_classes = {cls: dict(vars(cls)) for cls in type(shell).__mro__ if cls is not object}
    _state.update(
        builtins={k: v for k, v in vars(builtins).items() if k not in _IGNORED_BUILTINS},
        modules=modules,
        sys_hooks={name: getattr(sys, name) for name in _SYS_HOOKS},
        shell=shell,
        shell_instance_keys=set(vars(shell)),
        shell_classes=shell_classes,
        custom_exceptions=(shell.custom_exceptions, shell.CustomTB),
        transformers=(list(shell.input_transformers_cleanup), list(shell.input_transformers_post),
                      list(shell.ast_transformers)),
        events={name: list(cbs) for name, cbs in shell.events.callbacks.items()},
        exec=builtins.exec, compile=builtins.compile,
    )


def _restore_dict(target_set, target_del, current, snapshot, label, report, only_code=True):
    for key, original in snapshot.items():
        if only_code and not _is_code(original):
            continue
        if key not in current or current[key] is not original:
            target_set(key, original)
            report.append(f"{label}.{key}")
    for key in [k for k in current if k not in snapshot]:
        if only_code and not _is_code(current[key]):
            continue
        target_del(key)
        report.append(f"{label}.{key} (added)")


def restore():
    """Put back the snapshot; return the names of what a student cell had changed."""
    report = []
    bdict = vars(builtins)
    current = {k: v for k, v in bdict.items() if k not in _IGNORED_BUILTINS}
    _restore_dict(bdict.__setitem__, bdict.__delitem__, current, _state["builtins"], "builtins", report)
    for name, (module, entries, classes) in _state["modules"].items():
        if sys.modules.get(name) is not module:
            sys.modules[name] = module
            report.append(f"sys.modules[{name!r}]")
        current = vars(module)
        for key, original in entries.items():
            if current.get(key) is not original:
                setattr(module, key, original)
                report.append(f"{name}.{key}")
        for cls, snapshot in classes.items():
            _restore_class(cls, snapshot, f"{name}.{cls.__name__}", report)
    for cls, snapshot in _state["shell_classes"].items():
        _restore_class(cls, snapshot, cls.__name__, report)
    shell = _state["shell"]
    for key in [k for k in vars(shell) if k not in _state["shell_instance_keys"]]:
        if callable(vars(shell)[key]):
            delattr(shell, key)
            report.append(f"shell.{key}")
    for name, original in _state["sys_hooks"].items():
        if getattr(sys, name) is not original:
            setattr(sys, name, original)
            report.append(f"sys.{name}")
    if sys.gettrace() is not None or sys.getprofile() is not None:
        sys.settrace(None)
        sys.setprofile(None)
        report.append("sys.settrace/setprofile")
    if (shell.custom_exceptions, shell.CustomTB) != _state["custom_exceptions"]:
        shell.custom_exceptions, shell.CustomTB = _state["custom_exceptions"]
        report.append("shell.set_custom_exc")
    cleanup, post, ast = _state["transformers"]
    if (shell.input_transformers_cleanup, shell.input_transformers_post, shell.ast_transformers) != (
            cleanup, post, ast):
        shell.input_transformers_cleanup[:] = cleanup
        shell.input_transformers_post[:] = post
        shell.ast_transformers[:] = ast
        report.append("shell input/ast transformers")
    plotting = _inline_backend_hooks()
    for name, callbacks in shell.events.callbacks.items():
        kept = [callback for callback in callbacks if any(callback is hook for hook in plotting)]
        if [c for c in callbacks if c not in kept] != _state["events"].get(name, []):
            callbacks[:] = _state["events"].get(name, []) + kept
            report.append(f"shell.events[{name!r}]")
    return report


def _inline_backend_hooks():
    """The callbacks pyplot and the inline backend register when a cell first draws a figure
    (pyplot's REPL display hook, the backend's flush): a plot before a test cell is not tampering."""
    pyplot, backend = sys.modules.get("matplotlib.pyplot"), sys.modules.get("matplotlib_inline.backend_inline")
    return ((pyplot._draw_all_if_interactive,) if pyplot else ()) + (
        (backend.flush_figures, backend.configure_once) if backend else ())


def _restore_class(cls, snapshot, label, report):
    current = dict(vars(cls))
    for key, original in snapshot.items():
        if _is_code(original) and current.get(key) is not original:
            try:
                setattr(cls, key, original)
                report.append(f"{label}.{key}")
            except (TypeError, AttributeError):
                pass
    for key, value in current.items():
        if key not in snapshot and callable(value) and not key.startswith("_abc"):
            try:
                delattr(cls, key)
                report.append(f"{label}.{key} (added)")
            except (TypeError, AttributeError):
                pass


def _fingerprint(code):
    """What a function's code does, independent of line numbers and of how it was compiled
    (IPython and exec() emit different bytecode for the same source)."""
    consts = tuple(_fingerprint(c) if isinstance(c, types.CodeType) else repr(c)
                   for c in code.co_consts)
    return (code.co_name, code.co_names, code.co_varnames, code.co_argcount, consts)


def _same(current, trusted):
    """Is `current` what the instructor's statement binds (same module, same function)?"""
    if isinstance(trusted, types.FunctionType):
        return isinstance(current, types.FunctionType) and (
            _fingerprint(current.__code__) == _fingerprint(trusted.__code__))
    if isinstance(trusted, type):
        return isinstance(current, type) and current.__qualname__ == trusted.__qualname__
    return current is trusted


def run_test(token, grade_id, source, setup):
    """Restore, re-run the instructor's set-up statements, run one test cell, print the token."""
    import linecache

    out = _state["sys_hooks"]["stdout"]
    changed = restore()
    if changed:
        out.write(f"{token} TAMPERED {json.dumps(sorted(set(changed)))}\n")
        out.flush()
    shell = _state["shell"]
    namespace = shell.user_ns
    namespace["__builtins__"] = builtins
    setup_code = _state["compile"](setup, "<course set-up>", "exec")
    fresh = {"__builtins__": builtins}
    _state["exec"](setup_code, fresh)
    redefined = sorted(name for name, value in fresh.items()
                       if name != "__builtins__" and not _same(namespace.get(name), value))
    if redefined:
        out.write(f"{token} TAMPERED {json.dumps(['redefined ' + n for n in redefined])}\n")
        out.flush()
    _state["exec"](setup_code, namespace)
    filename = f"<test {grade_id}>"
    code = shell.transform_cell(source)
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    _state["exec"](_state["compile"](code, filename, "exec"), namespace)
    out.write(f"{token} PASS\n")
    out.flush()
