"""nbgrader preprocessors for grading one submission: a sandboxed, guarded, time-boxed Execute,
and a SaveAutoGrades that scores test cells from the guard's verdicts, not from their outputs."""
import ast
import json
import os
import secrets
import sys
from time import monotonic

from jupyter_client.manager import AsyncKernelManager
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbgrader.preprocessors.base import NbGraderPreprocessor
from nbformat.v4 import new_output
from traitlets import Any, Dict, Float, Integer, List, Unicode

from nbgrader import utils
from nbgrader.api import Gradebook
from nbgrader.preprocessors import Execute, SaveAutoGrades

from . import sandbox


class SandboxKernelManager(AsyncKernelManager):
    """Starts the kernel with the guard, inside autograde.sandbox (or plainly, with spec None)."""

    sandbox_spec = Any(None)
    kernel_env = Dict({})  # without a sandbox: added to the grader's environment
    guard_args = Unicode("")

    def format_kernel_cmd(self, extra_arguments=None):
        exec_line = f"__import__('autograde.guard').guard.install({self.guard_args})"
        cmd = [sys.executable, "-m", "ipykernel_launcher", "-f", self.connection_file,
               f"--IPKernelApp.exec_lines={json.dumps([exec_line])}",
               "--HistoryManager.hist_file=:memory:", "--IPKernelApp.log_level=ERROR"]
        if self.sandbox_spec is None:
            return cmd
        sandbox.give_to_kernel(self.sandbox_spec, self.connection_file)
        return sandbox.kernel_command(self.sandbox_spec, cmd[3:])

    async def _async_pre_start_kernel(self, **kw):
        if self.sandbox_spec is None:
            kw["env"] = {**os.environ, **self.kernel_env}
        cmd, kw = await super()._async_pre_start_kernel(**kw)
        # A signal would reach the zygote's client, not the kernel (and end the client, and so
        # the kernel): ask the kernel to interrupt itself with a control message instead.
        self.kernel_spec.interrupt_mode = "message"
        return cmd, kw


class GuardedExecute(Execute):
    """Execute with: a sandboxed kernel, per-cell and per-submission time limits, a cap on kept
    output, survival of a dying kernel, and guarded test cells (see autograde.guard)."""

    # Set for every notebook by autograde/grade.py from the run's settings (autograde/settings.py,
    # where the defaults are): no second set of defaults here.
    sandbox_spec = Any(None, allow_none=True, help="a sandbox.SandboxSpec; None: no sandbox").tag(config=True)
    kernel_env = Dict(help="without a sandbox: added to the kernel's environment").tag(config=True)
    scratch = Unicode(help="the kernel's HOME and cwd").tag(config=True)
    cell_timeout = Integer(help="seconds per cell").tag(config=True)
    submission_timeout = Float(help="seconds per notebook").tag(config=True)
    max_output_bytes = Integer(help="output kept per cell").tag(config=True)
    protected_packages = List(help="packages whose functions are restored before every test cell").tag(config=True)
    preload = List(help="imported before student code, so their snapshot is trusted").tag(config=True)
    trusted_setup = Dict(help="grade_id -> instructor statements to re-run first").tag(config=True)
    report_path = Unicode(help="where the verdicts and events are written (JSON)").tag(config=True)

    def create_kernel_manager(self):
        km = SandboxKernelManager(config=self.config, transport="ipc",
                                  ip=os.path.join(self.scratch, "zmq"))
        km.connection_file = os.path.join(self.scratch, "kernel.json")
        km.sandbox_spec = self.sandbox_spec
        km.kernel_env = dict(self.kernel_env)
        km.guard_args = f"packages={list(self.protected_packages)!r}, preload={list(self.preload)!r}"
        self.km = km
        return km

    def preprocess(self, nb, resources=None, km=None):
        self._deadline = monotonic() + self.submission_timeout
        self._events = []          # (kind, detail) in order
        self._stopped = None
        self._verdicts = {}
        self._tampered = {}
        resources.setdefault("metadata", {})["path"] = self.scratch
        self._test_cells = {}
        self._captured = {}
        self._output_bytes = {}
        try:
            nb, resources = super().preprocess(nb, resources, km)
        except (DeadKernelError, CellTimeoutError, RuntimeError) as error:  # kernel never started
            self._record("kernel_died", f"kernel could not run the notebook: {error}"[:300])
        resources["autograde_verdicts"] = dict(self._verdicts)
        if self.report_path:
            with open(self.report_path, "w") as f:
                json.dump({"events": self._events, "verdicts": self._verdicts,
                           "tampered": self._tampered}, f)
        return nb, resources

    def _record(self, kind, detail):
        self._events.append([kind, detail])

    def _label(self, cell, index):
        return cell.metadata.get("nbgrader", {}).get("grade_id") or f"cell {index}"

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code" or not cell.source.strip():
            return cell, self.resources
        label = self._label(cell, index)
        if self._stopped:
            cell.outputs = [new_output("stream", name="stderr",
                                       text=f"[grader] not run: {self._stopped}\n")]
            return cell, self.resources
        remaining = self._deadline - monotonic()
        if remaining <= 1:
            self._stop("timeout", f"submission time limit ({self.submission_timeout:.0f} s) reached "
                       f"before {label}")
            return self.preprocess_cell(cell, resources, index)
        self.timeout = int(max(1, min(self.cell_timeout, remaining)))
        is_test = utils.is_grade(cell) and not utils.is_solution(cell)
        source = cell.source
        if is_test:
            token = secrets.token_hex(16)
            self._test_cells[index] = token
            setup = self.trusted_setup.get(label, "")
            cell.source = (f"__import__('autograde.guard').guard.run_test("
                           f"{token!r}, {label!r}, {source!r}, {setup!r})")
        try:
            self.execute_cell(cell, index, store_history=not is_test)
        except DeadKernelError:
            self._stop("kernel_died", f"the kernel died in {label}")
        except CellTimeoutError:
            self._stop("timeout", f"{label} ran past {self.timeout} s and ignored the interrupt")
        finally:
            cell.source = source
        if any(o.output_type == "error" and o.get("ename") == "MemoryError" for o in cell.outputs):
            self._record("memory_limit", f"{label} ran out of memory")
        if any(o.output_type == "error" and o.get("ename") == "SystemExit" for o in cell.outputs):
            self._record("sys_exit", f"{label} called sys.exit")
        if is_test:
            self._judge(cell, index, label)
        return cell, self.resources

    def _stop(self, kind, detail):
        self._record(kind, detail)
        self._stopped = detail
        try:
            if self.km is not None:
                self.km.shutdown_kernel(now=True)
        except Exception:
            pass

    async def _async_handle_timeout(self, timeout, cell=None):
        self._record("timeout", f"{self._label(cell, '?') if cell else 'a cell'} ran past {timeout} s")
        return await super()._async_handle_timeout(timeout, cell)

    def on_cell_executed(self, **kwargs):
        super().on_cell_executed(**kwargs)
        reply = kwargs["execute_reply"]
        self._last_reply_ok = bool(reply) and reply["content"].get("status") == "ok"

    def _judge(self, cell, index, label):
        token = self._test_cells[index]
        text = self._captured.get(index, "")
        passed = (f"{token} PASS" in text and getattr(self, "_last_reply_ok", False)
                  and not any(o.output_type == "error" for o in cell.outputs))
        for line in text.splitlines():
            if line.startswith(f"{token} TAMPERED "):
                names = json.loads(line.split(" ", 2)[2])
                self._tampered[label] = names
                self._record("tampered", f"before {label}: restored {', '.join(names[:8])}")
        self._verdicts[label] = passed
        for output in cell.outputs:  # the guard's lines are for the grader, not for the feedback
            if output.output_type == "stream":
                output.text = "".join(l for l in output.text.splitlines(True) if token not in l)
        cell.outputs = [o for o in cell.outputs if o.output_type != "stream" or o.text]
        self._last_reply_ok = False

    def output(self, outs, msg, display_id, cell_index):
        content = msg.get("content", {})
        if msg["msg_type"] == "stream" and cell_index in self._test_cells:
            token = self._test_cells[cell_index]
            text = content.get("text", "")
            for line in text.splitlines():
                if line.startswith(token):
                    self._captured[cell_index] = self._captured.get(cell_index, "") + line + "\n"
        size = len(json.dumps(content, default=str))
        used = self._output_bytes.get(cell_index, 0)
        self._output_bytes[cell_index] = used + size
        if used + size > self.max_output_bytes:
            if used <= self.max_output_bytes:
                self._record("output_truncated", f"output of cell {cell_index} over "
                             f"{self.max_output_bytes} bytes was dropped")
                outs.append(new_output("stream", name="stdout",
                                       text="\n[grader] output truncated\n"))
            return None
        return super().output(outs, msg, display_id, cell_index)


class DropEmptyNbgraderMetadata(NbGraderPreprocessor):
    """DeduplicateIds leaves `nbgrader: {}` on a duplicated cell, and nbgrader 0.9.6's
    OverwriteCells.add_missing_task_cells then fails with KeyError('grade_id'): drop it."""

    def preprocess_cell(self, cell, resources, index):
        if "nbgrader" in cell.metadata and not cell.metadata.nbgrader.get("grade_id"):
            del cell.metadata["nbgrader"]
        return cell, resources


class VerdictSaveAutoGrades(SaveAutoGrades):
    """A test cell earns its points only on the guard's verdict (stderr no longer costs points)."""

    def preprocess(self, nb, resources):
        self._verdicts = resources.get("autograde_verdicts", {})
        return super().preprocess(nb, resources)

    def _add_score(self, cell, resources):
        if cell.cell_type != "code" or utils.is_solution(cell):
            return super()._add_score(cell, resources)
        grade = self.gradebook.find_grade(cell.metadata["nbgrader"]["grade_id"], self.notebook_id,
                                          self.assignment_id, self.student_id)
        passed = self._verdicts.get(cell.metadata["nbgrader"]["grade_id"], False)
        grade.auto_score = float(cell.metadata["nbgrader"]["points"]) if passed else 0.0
        grade.needs_manual_grade = grade.manual_score is not None
        self.gradebook.db.commit()


def trusted_setup(db_url, assignment, notebook, release_path):
    """For each test cell: the import and def/class statements of the instructor's locked cells up
    to it, in release order, with their source from the gradebook (never from the submission)."""
    import nbformat
    with Gradebook(db_url) as gb:
        nb = gb.find_notebook(notebook, assignment)
        sources = {c.name: c for c in nb.source_cells}
        grade_ids = {c.name for c in nb.grade_cells}
        solution_ids = {c.name for c in nb.solution_cells}
    locked = []
    for released in nbformat.read(release_path, as_version=4).cells:
        cell = sources.get(released.metadata.get("nbgrader", {}).get("grade_id"))
        if cell is not None and cell.cell_type == "code" and cell.name not in solution_ids and cell.locked:
            locked.append((cell.name, cell.source))
    return setups_before(locked, grade_ids)


def setups_before(locked_cells, grade_ids):
    """{test cell: the import and def/class statements of the cells before it} for `locked_cells`,
    the (grade id, source) of the locked code cells in order; the test cells are `grade_ids`."""
    setup, statements = {}, []
    for name, source in locked_cells:
        if name in grade_ids:
            setup[name] = "\n".join(statements)
        statements.extend(definitions(source))
    return setup


def definitions(source):
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    keep = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return [ast.get_source_segment(source, node) for node in tree.body if isinstance(node, keep)]
