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
    "accelerator_local_sgd": '''\
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
''',
    "accelerator_checkpointing": '''\
accelerator = Accelerator(device_placement=True)
model, optimizer, dataloader, lr_scheduler = accelerator.prepare(
    model, optimizer, dataloader, lr_scheduler)
accelerator.load_state("checkpoint")          # only when resuming
dataloader = accelerator.skip_first_batches(dataloader, done_in_epoch)
for batch in dataloader:
    optimizer.zero_grad()
    outputs = model(**batch)
    loss = outputs.loss
    accelerator.backward(loss)
    optimizer.step()
    lr_scheduler.step()
    accelerator.save_state("checkpoint")      # every few steps
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
