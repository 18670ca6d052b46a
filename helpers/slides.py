"""The slides' training loops as text, and a view of the lines that change between two of them.

Each lesson shows which lines of the lesson before it change (lesson 2: lesson 1's loop with an
Accelerator; lesson 3: lesson 2's loop with gradient accumulation), as the accelerate examples
mark their changes.
"""
import difflib

LOOPS = {
    "pytorch": '''\
for batch in dataloader:
    optimizer.zero_grad()
    batch = {key: value.to(device) for key, value in batch.items()}
    outputs = model(**batch)
    loss = outputs.loss
    loss.backward()
    optimizer.step()
    lr_scheduler.step()
''',
    "accelerator": '''\
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
''',
    "pytorch_accumulation": '''\
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
''',
    "accelerator_accumulation": '''\
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
''',
    "accelerator_checkpointing": '''\
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
''',
    "pytorch_autocast": '''\
for batch in dataloader:
    optimizer.zero_grad()
    batch = {key: value.to(device) for key, value in batch.items()}
    with torch.autocast(device.type, dtype=torch.bfloat16):
        outputs = model(**batch)
        loss = outputs.loss
    loss.backward()
    optimizer.step()
    lr_scheduler.step()
''',
    "pytorch_grad_scaler": '''\
scaler = torch.amp.GradScaler("cuda")
for batch in dataloader:
    optimizer.zero_grad()
    batch = {key: value.to(device) for key, value in batch.items()}
    with torch.autocast("cuda", dtype=torch.float16):
        outputs = model(**batch)
        loss = outputs.loss
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    lr_scheduler.step()
''',
    "accelerator_mixed_precision": '''\
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
''',
}


def changed_lines(before, after):
    """The lines of `after` with a mark in front: '-' removed, '+' added, ' ' kept."""
    before, after = LOOPS.get(before, before), LOOPS.get(after, after)
    lines = difflib.ndiff(before.splitlines(), after.splitlines())
    return "\n".join(line for line in lines if not line.startswith("?"))


def show_changes(before, after):
    """Show the changes from one loop to another as a coloured diff (plain text outside Jupyter).

    `before` and `after` are names in LOOPS or code as text.
    """
    text = changed_lines(before, after)
    try:
        from IPython.display import Markdown, display
    except ImportError:
        print(text)
    else:
        display(Markdown(f"```diff\n{text}\n```"))
