"""The slides' training loops as real functions, and a view of the lines that change between two.

Each loop below is runnable code (tests/test_slides.py trains with every one of them); a lesson
shows its body with `source(name)` and the lines that change from one loop to the next with
`show_changes(before, after)`, as the accelerate examples mark their changes.
"""
import difflib
import inspect
import textwrap

import torch
from accelerate import Accelerator
from accelerate.local_sgd import LocalSGD


def pytorch(model, optimizer, lr_scheduler, dataloader, device):
    for batch in dataloader:
        optimizer.zero_grad()
        batch = {key: value.to(device) for key, value in batch.items()}
        outputs = model(**batch)
        loss = outputs.loss
        loss.backward()
        optimizer.step()
        lr_scheduler.step()


def accelerator(model, optimizer, lr_scheduler, dataloader):
    accelerator = Accelerator(device_placement=True)
    model, optimizer, dataloader, lr_scheduler = accelerator.prepare(
        model, optimizer, dataloader, lr_scheduler)
    for batch in dataloader:
        optimizer.zero_grad()
        outputs = model(**batch)
        loss = outputs.loss
        accelerator.backward(loss)
        optimizer.step()
        lr_scheduler.step()


def pytorch_accumulation(model, optimizer, lr_scheduler, dataloader, device, gradient_accumulation_steps=2):
    for index, batch in enumerate(dataloader):
        batch = {key: value.to(device) for key, value in batch.items()}
        outputs = model(**batch)
        loss = outputs.loss
        loss = loss / gradient_accumulation_steps
        loss.backward()
        if (index + 1) % gradient_accumulation_steps == 0:
            optimizer.step()
            lr_scheduler.step()
            optimizer.zero_grad()


def accelerator_accumulation(model, optimizer, lr_scheduler, dataloader):
    accelerator = Accelerator(gradient_accumulation_steps=2)
    model, optimizer, dataloader, lr_scheduler = accelerator.prepare(
        model, optimizer, dataloader, lr_scheduler)
    for index, batch in enumerate(dataloader):
        with accelerator.accumulate(model):
            outputs = model(**batch)
            loss = outputs.loss
            accelerator.backward(loss)
            optimizer.step()
            lr_scheduler.step()
            optimizer.zero_grad()


def accelerator_local_sgd(model, optimizer, lr_scheduler, dataloader):
    accelerator = Accelerator(device_placement=True)
    model, optimizer, dataloader, lr_scheduler = accelerator.prepare(
        model, optimizer, dataloader, lr_scheduler)
    with LocalSGD(accelerator=accelerator, model=model, local_sgd_steps=8) as local_sgd:
        for batch in dataloader:
            optimizer.zero_grad()
            outputs = model(**batch)
            loss = outputs.loss
            accelerator.backward(loss)
            optimizer.step()
            lr_scheduler.step()
            local_sgd.step()


def accelerator_checkpointing(model, optimizer, lr_scheduler, dataloader, checkpoint, resume=False, done_in_epoch=0):
    accelerator = Accelerator(device_placement=True)
    model, optimizer, dataloader, lr_scheduler = accelerator.prepare(
        model, optimizer, dataloader, lr_scheduler)
    if resume:  # the saved state, then the batches of this epoch it had not trained on (0 skipped: all)
        accelerator.load_state(checkpoint)
        dataloader = accelerator.skip_first_batches(dataloader, done_in_epoch)
    for batch in dataloader:
        optimizer.zero_grad()
        outputs = model(**batch)
        loss = outputs.loss
        accelerator.backward(loss)
        optimizer.step()
        lr_scheduler.step()
        accelerator.save_state(checkpoint)  # after every step here; every few hundred in practice


def accelerator_activation_checkpointing(model, optimizer, lr_scheduler, dataloader):
    model.activation_checkpointing_enable()
    accelerator = Accelerator(device_placement=True)
    model, optimizer, dataloader, lr_scheduler = accelerator.prepare(
        model, optimizer, dataloader, lr_scheduler)
    for batch in dataloader:
        optimizer.zero_grad()
        outputs = model(**batch)
        loss = outputs.loss
        accelerator.backward(loss)
        optimizer.step()
        lr_scheduler.step()


def pytorch_autocast(model, optimizer, lr_scheduler, dataloader, device):
    for batch in dataloader:
        optimizer.zero_grad()
        batch = {key: value.to(device) for key, value in batch.items()}
        with torch.autocast(device.type, dtype=torch.bfloat16):
            outputs = model(**batch)
            loss = outputs.loss
        loss.backward()
        optimizer.step()
        lr_scheduler.step()


def pytorch_grad_scaler(model, optimizer, lr_scheduler, dataloader, device):
    scaler = torch.amp.GradScaler(device.type)
    for batch in dataloader:
        optimizer.zero_grad()
        batch = {key: value.to(device) for key, value in batch.items()}
        with torch.autocast(device.type, dtype=torch.float16):
            outputs = model(**batch)
            loss = outputs.loss
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        lr_scheduler.step()


def accelerator_mixed_precision(model, optimizer, lr_scheduler, dataloader):
    accelerator = Accelerator(device_placement=True, mixed_precision="bf16")
    model, optimizer, dataloader, lr_scheduler = accelerator.prepare(
        model, optimizer, dataloader, lr_scheduler)
    for batch in dataloader:
        optimizer.zero_grad()
        outputs = model(**batch)
        loss = outputs.loss
        accelerator.backward(loss)
        optimizer.step()
        lr_scheduler.step()


LOOPS = {loop.__name__: loop for loop in (pytorch, accelerator, pytorch_accumulation, accelerator_accumulation,
                                         accelerator_local_sgd, accelerator_checkpointing,
                                         accelerator_activation_checkpointing, pytorch_autocast,
                                         pytorch_grad_scaler, accelerator_mixed_precision)}


def source(name):
    """The body of the loop `name` as the slides show it (the function's `def` line left out)."""
    lines = inspect.getsource(LOOPS[name]).splitlines(keepends=True)
    return textwrap.dedent("".join(lines[1:]))


def changed_lines(before, after):
    """The lines of `after` with a mark in front: '-' removed, '+' added, ' ' kept."""
    lines = difflib.ndiff(source(before).splitlines(), source(after).splitlines())
    return "\n".join(line for line in lines if not line.startswith("?"))


def show_changes(before, after):
    """Show the changes from one loop of LOOPS to another as a coloured diff (plain text outside Jupyter)."""
    text = changed_lines(before, after)
    try:
        from IPython.display import Markdown, display
    except ImportError:
        print(text)
    else:
        display(Markdown(f"```diff\n{text}\n```"))
