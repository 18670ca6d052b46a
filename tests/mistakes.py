"""The mistakes table: per exercise, typical wrong answers that students really make (off-by-one
steps, a schedule sized in batches, a missing zero_grad, loss.backward() instead of
accelerator.backward(loss), macro F1, a loss scaler that is not used, round instead of //, ...),
each with the test cells that must catch it. The session's lesson runs try them in the lesson's
kernel (mistake_runs.py); test_autograde_mistakes.py reads the outcome.

A mistake is (name, the wrong answer cell[, more test cells that must catch it]); by default its
own exercise's test cell catches it.
"""
import re

TOKENIZE = "def tokenize_pairs(batch, tokenizer, max_length):\n    return {call}\n"
PAIR = 'batch["sentence1"], batch["sentence2"]'
FRACTION = "def padding_fraction(batches):\n{body}"
PADDING = "sum(int((b['attention_mask'] == 0).sum()) for b in batches)"
GROUPED = "def length_grouped_batches(lengths, batch_size, seed):\n{body}    return batches\n"
SORT = "    order = sorted(range(len(lengths)), key=lambda i: lengths[i])\n"
CUT = "    batches = [order[start:start + batch_size] for start in range(0, len(order), batch_size)]\n"
SHUFFLE = "    random.Random(seed).shuffle(batches)\n"
SCHEDULER = ("import math\n\ndef make_lr_scheduler(optimizer, num_examples, batch_size, epochs):\n"
             "    num_training_steps = {steps}\n"
             "    return get_linear_schedule_with_warmup(optimizer=optimizer, "
             "num_warmup_steps={warmup}, num_training_steps=num_training_steps)\n")
TRAIN_1 = ("def train_one_epoch(model, dataloader, optimizer, lr_scheduler, device):\n"
           "    model.train()\n    losses = []\n    for batch in dataloader:\n{body}"
           "        losses.append(loss.item())\n    return losses\n")
PREPARE = ("def prepare_for_training(model, optimizer, dataloader, lr_scheduler, validation_loader, cpu=False):\n"
           "    accelerator = Accelerator({arguments})\n{body}"
           "    return accelerator, model, optimizer, dataloader, lr_scheduler, validation_loader\n")
PREPARED = "model, optimizer, dataloader, lr_scheduler, validation_loader"


def prepare(arguments="device_placement=True, cpu=cpu", unpacked=PREPARED, passed=PREPARED):
    return PREPARE.format(arguments=arguments, body=f"    {unpacked} = accelerator.prepare({passed})\n")


TRAIN_2 = ("def train_one_epoch_accelerated(accelerator, model, optimizer, dataloader, lr_scheduler):\n"
           "    model.train()\n    losses = []\n    for batch in dataloader:\n{body}"
           "        losses.append({recorded})\n    return losses\n")
GATHERED = "accelerator.gather(loss).mean().item()"
STEP_DUE = ("def accumulation_step_due(index, num_batches, gradient_accumulation_steps):\n"
            "    return {expression}\n")
NUM_STEPS = ("import math\n\ndef num_training_steps(num_batches, epochs, gradient_accumulation_steps):\n"
             "    return {expression}\n")
TRAIN_3 = ("def train_one_epoch_accumulating(model, dataloader, optimizer, lr_scheduler, device,\n"
           "                                 gradient_accumulation_steps):\n"
           "    model.train()\n    num_batches = len(dataloader)\n"
           "    examples_in_group = helpers.examples_per_window(\n"
           "        len(dataloader.dataset), dataloader.batch_size, gradient_accumulation_steps)\n"
           "    losses = []\n    for index, batch in enumerate(dataloader):\n"
           "        batch = {{key: value.to(device) for key, value in batch.items()}}\n"
           "        loss = model(**batch).loss\n        losses.append(loss.item())\n{body}"
           "    return losses\n")
ACCELERATE_3 = ("def train_with_accelerator_accumulating(model, optimizer, dataloader, lr_scheduler,\n"
                "                                        gradient_accumulation_steps=2, cpu=False):\n"
                "    accelerator = Accelerator({arguments}, cpu=cpu)\n"
                "    model, optimizer, dataloader, lr_scheduler = accelerator.prepare(\n"
                "        model, optimizer, dataloader, lr_scheduler)\n"
                "    model.train()\n    losses, stepped_after = [], []\n"
                "    for index, batch in enumerate(dataloader):\n{body}"
                "        losses.append(loss.item())\n    return {returned}\n")
NOTED = "            if accelerator.sync_gradients:\n                stepped_after.append(index)\n"


def accelerate_3(arguments="gradient_accumulation_steps=gradient_accumulation_steps", loss="loss", noted=NOTED,
                 returned="losses, stepped_after", body=None):
    return ACCELERATE_3.format(arguments=arguments, returned=returned,
                               body=body or ACCUMULATE.format(loss=loss, noted=noted))


METRICS = ("def compute_metrics(eval_pred):\n    logits, labels = eval_pred\n"
           "    predictions = {predictions}\n"
           "    return {{\"accuracy\": {accuracy}, \"f1\": {f1}}}\n")
ARGS = ("def make_training_args(output_dir, epochs, batch_size, effective_batch, learning_rate):\n{check}"
        "    return TrainingArguments(output_dir=output_dir, {arguments}, report_to=\"none\")\n")
GOOD_ARGS = "num_train_epochs=epochs, learning_rate=learning_rate"
MICRO = "per_device_train_batch_size=batch_size"
GA_4 = "gradient_accumulation_steps=effective_batch // batch_size"
CHECK_4 = "    if effective_batch % batch_size:\n        raise ValueError('no whole number of micro-batches')\n"


def args_4(arguments, check=CHECK_4):
    return ARGS.format(arguments=arguments, check=check)
GOOD_STEP = "        loss.backward()\n"


def step_body(zero="optimizer.zero_grad()", forward="model(**batch)", backward="loss.backward()",
              scheduler="lr_scheduler.step()", order=("zero", "forward", "backward", "step")):
    lines = {"zero": zero, "forward": f"loss = {forward}.loss", "backward": backward,
             "step": f"optimizer.step()\n        {scheduler}"}
    return "".join(f"        {lines[part]}\n" for part in order if lines[part])


MOVE = "        batch = {key: value.to(device) for key, value in batch.items()}\n"
ACCUMULATE = ("        with accelerator.accumulate(model):\n            loss = model(**batch).loss\n"
              "            accelerator.backward({loss})\n{noted}            optimizer.step()\n"
              "            lr_scheduler.step()\n            optimizer.zero_grad()\n")
CLIP_3 = ("def train_with_clipping(model, optimizer, dataloader, lr_scheduler, gradient_accumulation_steps=2,\n"
          "                        max_norm=1.0, cpu=False):\n"
          "    accelerator = Accelerator(gradient_accumulation_steps=gradient_accumulation_steps, cpu=cpu)\n"
          "    model, optimizer, dataloader, lr_scheduler = accelerator.prepare(\n"
          "        model, optimizer, dataloader, lr_scheduler)\n"
          "    model.train()\n    losses = []\n    for batch in dataloader:\n"
          "        with accelerator.accumulate(model):\n            loss = model(**batch).loss\n"
          "{before}            accelerator.backward(loss)\n{after}            optimizer.step()\n{stepped}"
          "            lr_scheduler.step()\n            optimizer.zero_grad()\n"
          "        losses.append(loss.item())\n    return losses\n")
CLIP_IF_SYNC = ("            if accelerator.sync_gradients:\n"
                "                accelerator.clip_grad_norm_(model.parameters(), max_norm)\n")


def clip_3(before="", after=CLIP_IF_SYNC, stepped=""):
    return CLIP_3.format(before=before, after=after, stepped=stepped)


GOOD_DUE = "(index + 1) % gradient_accumulation_steps == 0 or index + 1 == num_batches"
# the loop's mistakes decide the step inline, as a student may: a wrong accumulation_step_due cannot hide them
STEP_DUE_INLINE = f"        if {GOOD_DUE}:\n"

CHECKPOINTED = "def checkpointed_forward(layers, hidden):\n{body}"
CHECKPOINT_EACH = ("    for layer in layers:\n        hidden = checkpoint(layer, hidden, use_reentrant=False{extra})\n"
                   "    return hidden\n")
COMPARE = ("def compare_gradients(model, batch, seed=0):\n    model.train()\n    grads = []\n"
           "    for enabled in (False, True):\n{body}"
           "        model(**batch).loss.backward()\n"
           "        grads.append([p.grad.detach().clone() for p in model.parameters()])\n"
           "    model.activation_checkpointing_disable()\n"
           "    return {result}\n")
LARGEST = "max((a - b).abs().max().item() for a, b in zip(*grads))"
ZERO = "        model.zero_grad(set_to_none=True)\n"
SWITCH = ("        if enabled:\n            model.activation_checkpointing_enable()\n"
          "        else:\n            model.activation_checkpointing_disable()\n")
SEED = "        torch.manual_seed(seed)\n"
ARGS_5 = ("def make_training_args(output_dir, batch_size, epochs):\n"
          "    return TrainingArguments(output_dir={output_dir}, {arguments}, report_to=\"none\")\n")
GOOD_ARGS_5 = "per_device_train_batch_size=batch_size, num_train_epochs=epochs"
SYNCS = "import math\n\ndef count_synchronisations(optimizer_steps, local_sgd_steps):\n    return {expression}\n"
LOCAL_SGD = ("def train_one_epoch_local_sgd(accelerator, model, optimizer, dataloader, lr_scheduler, local_sgd_steps):\n"
             "    model.train()\n    losses = []\n"
             "    with LocalSGD(accelerator=accelerator, model=model, local_sgd_steps={k}) as local_sgd:\n"
             "        for batch in dataloader:\n            loss = model(**batch).loss\n"
             "            accelerator.backward(loss)\n{early}            optimizer.step()\n"
             "            lr_scheduler.step()\n"
             "            optimizer.zero_grad()\n{sync}            losses.append(loss.item())\n    return losses\n")
SYNC = "            local_sgd.step()\n"
K1 = "l6-test-k1-is-data-parallel"   # lesson 6's K = 1 test runs the same loop
MIXED = "def mixed_precision_step(model, batch, optimizer, scaler, device_type, dtype):\n{body}    return loss.item()\n"
AUTOCAST = "    with torch.autocast(device_type, dtype=dtype):\n        loss = model(**batch).loss\n"
SCALED = "    scaler.scale(loss).backward()\n    scaler.step(optimizer)\n    scaler.update()\n    optimizer.zero_grad()\n"
CLIPPED_7 = ("def clipped_mixed_precision_step(model, batch, optimizer, scaler, device_type, dtype, max_norm):\n"
             "    with torch.autocast(device_type, dtype=dtype):\n        loss = model(**batch).loss\n"
             "    scaler.scale(loss).backward()\n{body}    scaler.update()\n    optimizer.zero_grad()\n"
             "    return loss.item()\n")
UNSCALE = "    scaler.unscale_(optimizer)\n"
CLIP = "    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)\n"
STEP = "    scaler.step(optimizer)\n"
ARGS_7 = ("def make_training_args(output_dir, batch_size, epochs, use_cpu):\n"
          "    return TrainingArguments(output_dir=output_dir, per_device_train_batch_size=batch_size,\n"
          "                             num_train_epochs=epochs, {arguments}, report_to=\"none\")\n")
STATE = "def optimizer_state_bytes(optimizer):\n    return {expression}\n"
TENSORS = "for state in optimizer.state.values() for v in state.values() if isinstance(v, torch.Tensor)"
ADAMW = "def adamw_state_bytes(model):\n    return {expression}\n"
POINT = "def resume_point(completed_steps, batches_per_epoch):\n    return {expression}\n"
ZERO_BYTES = ("def zero_bytes_per_process(num_parameters, num_processes, stage):\n"
              "    sharded = {sharded}\n"
              "    whole = {{'parameters': {number} * num_parameters, 'gradients': {number} * num_parameters,\n"
              "             'optimizer_state': {state} * num_parameters}}\n"
              "    return {{part: {divided} if part in sharded else size for part, size in whole.items()}}\n")
STAGES = "{0: (), 1: ('optimizer_state',), 2: ('optimizer_state', 'gradients'), 3: ('optimizer_state', 'gradients', 'parameters')}[stage]"
def zero_bytes(sharded=STAGES, number="4", state="8", divided="size // num_processes"):
    return ZERO_BYTES.format(sharded=sharded, number=number, state=state, divided=divided)
LOCAL_BYTES = ("def local_bytes(tensors):\n    total = 0\n    for tensor in tensors:\n{skip}"
               "        {piece}\n        total += {size}\n    return total\n")
SKIP_NONE = "        if tensor is None:\n            continue\n"
TO_LOCAL = "tensor = tensor.to_local() if isinstance(tensor, DTensor) else tensor"
def local_bytes(skip=SKIP_NONE, piece=TO_LOCAL, size="tensor.numel() * tensor.element_size()"):
    return LOCAL_BYTES.format(skip=skip, piece=piece, size=size)
TWO_PASSES = "def local_bytes(tensors):\n    return {first} + {second}\n"
PLAIN = ("sum(t.numel() * t.element_size() for t in tensors "
         "if t is not None and not isinstance(t, DTensor))")
PIECES = "sum(t.to_local().numel() * t.to_local().element_size() for t in tensors if isinstance(t, DTensor))"
# The loop's mistakes find their place with divmod, as a student may: a wrong resume_point cannot hide them
RESUME = ("def resume_training(model, optimizer, dataloader, checkpoint_dir, epochs):\n"
          "    accelerator, model, optimizer, dataloader, lr_scheduler, progress = helpers.prepare_resumable(\n"
          "        model, dataloader, optimizer, epochs)\n{load}"
          "    first_epoch, batches_done = divmod(progress.completed_steps, len(dataloader))\n"
          "    model.train()\n    for epoch in range({epochs}):\n"
          "{set_epoch}        batches = {batches}\n"
          "        for batch in batches:\n            loss = model(**batch).loss\n"
          "            accelerator.backward(loss)\n            optimizer.step()\n            lr_scheduler.step()\n"
          "            optimizer.zero_grad()\n{count}    return model\n")
LOAD = "    accelerator.load_state(checkpoint_dir)\n"
SKIP = "accelerator.skip_first_batches(dataloader, batches_done)"
SKIP_FIRST = f"{SKIP} if epoch == first_epoch else dataloader"
SET_EPOCH = "        dataloader.set_epoch(epoch)\n"
COUNT = "            progress.completed_steps += 1\n"


def resume(load=LOAD, epochs="first_epoch, epochs", set_epoch=SET_EPOCH, batches=SKIP_FIRST, count=COUNT):
    return RESUME.format(load=load, epochs=epochs, set_epoch=set_epoch, batches=batches, count=count)


# exercise grade_id -> [(what the student did wrong, their cell)]
MISTAKES = {
    "l0-tokenize-pairs": [
        ("the first sentence only", TOKENIZE.format(
            call='tokenizer(batch["sentence1"], truncation=True, max_length=max_length)')),
        ("the two sentences joined into one text", TOKENIZE.format(
            call='tokenizer([a + " " + b for a, b in zip(batch["sentence1"], batch["sentence2"])], truncation=True, '
                 'max_length=max_length)')),
        ("padded to max_length in map", TOKENIZE.format(
            call=f'tokenizer({PAIR}, truncation=True, max_length=max_length, padding="max_length")')),
        ("padded to the longest of map's batch", TOKENIZE.format(
            call=f"tokenizer({PAIR}, truncation=True, max_length=max_length, padding=True)")),
        ("not cut at max_length", TOKENIZE.format(call=f"tokenizer({PAIR})")),
        ("max_length written in as 64", TOKENIZE.format(call=f"tokenizer({PAIR}, truncation=True, max_length=64)")),
    ],
    "l0-padding-fraction": [
        ("the share of real tokens", FRACTION.format(
            body="    real = sum(int(b['attention_mask'].sum()) for b in batches)\n"
                 "    return real / sum(b['attention_mask'].numel() for b in batches)\n")),
        ("the mean of the batches' own fractions", FRACTION.format(
            body="    fractions = [float((b['attention_mask'] == 0).float().mean()) for b in batches]\n"
                 "    return sum(fractions) / len(fractions)\n")),
        ("a count, not a share", FRACTION.format(body=f"    return {PADDING}\n")),
        ("a tensor, not a float", FRACTION.format(
            body="    padding = sum((b['attention_mask'] == 0).sum() for b in batches)\n"
                 "    return padding / sum(b['attention_mask'].numel() for b in batches)\n")),
        ("the first batch only", FRACTION.format(
            body="    mask = next(iter(batches))['attention_mask']\n    return float((mask == 0).sum()) / mask.numel()\n")),
        ("padding tokens per example", FRACTION.format(
            body=f"    return {PADDING} / sum(len(b['attention_mask']) for b in batches)\n")),
    ],
    "l0-length-grouped-batches": [
        ("the batches not shuffled: short to long", GROUPED.format(body=SORT + CUT)),
        ("the examples shuffled, not sorted", GROUPED.format(
            body="    order = list(range(len(lengths)))\n    random.Random(seed).shuffle(order)\n" + CUT)),
        ("the seed ignored: the global random", GROUPED.format(body=SORT + CUT + "    random.shuffle(batches)\n")),
        ("the last, shorter batch dropped", GROUPED.format(
            body=SORT + "    batches = [order[start:start + batch_size] "
                        "for start in range(0, len(order) - batch_size + 1, batch_size)]\n" + SHUFFLE)),
        ("the lengths sorted, not the example numbers", GROUPED.format(body="    order = sorted(lengths)\n" + CUT + SHUFFLE)),
        ("the examples shuffled inside each batch, not the batches", GROUPED.format(
            body=SORT + CUT + "    for batch in batches:\n        random.Random(seed).shuffle(batch)\n")),
    ],
    "l1-make-lr-scheduler": [
        ("the last, shorter batch left out: // instead of math.ceil", SCHEDULER.format(
            steps="num_examples // batch_size * epochs", warmup="int(num_training_steps * 0.1)")),
        ("schedule sized for one epoch", SCHEDULER.format(
            steps="math.ceil(num_examples / batch_size)", warmup="int(num_training_steps * 0.1)")),
        ("rounded up once for the whole run, not per epoch", SCHEDULER.format(
            steps="math.ceil(num_examples * epochs / batch_size)", warmup="int(num_training_steps * 0.1)")),
        ("no warm-up", SCHEDULER.format(steps="math.ceil(num_examples / batch_size) * epochs", warmup="0")),
        ("warm-up rounded, not rounded down", SCHEDULER.format(
            steps="math.ceil(num_examples / batch_size) * epochs", warmup="round(num_training_steps * 0.1)")),
        ("warm-up of 10 % of one epoch", SCHEDULER.format(
            steps="math.ceil(num_examples / batch_size) * epochs",
            warmup="int(math.ceil(num_examples / batch_size) * 0.1)")),
        ("a constant learning rate", "def make_lr_scheduler(optimizer, num_examples, batch_size, epochs):\n"
         "    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)\n"),
    ],
    "l1-train-one-epoch": [
        ("no zero_grad", TRAIN_1.format(body=MOVE + step_body(zero=""))),
        ("scheduler never steps", TRAIN_1.format(body=MOVE + step_body(scheduler=""))),
        ("no attention mask", TRAIN_1.format(body=MOVE + step_body(
            forward="model(input_ids=batch['input_ids'], labels=batch['labels'])"))),
        ("step before backward", TRAIN_1.format(body=MOVE + step_body(
            order=("zero", "forward", "step", "backward")))),
        ("zero_grad between backward and step", TRAIN_1.format(body=MOVE + step_body(
            order=("forward", "backward", "zero", "step")))),
    ],
    "l2-prepare-for-training": [
        ("returns the unprepared objects", PREPARE.format(
            arguments="device_placement=True, cpu=cpu", body=f"    accelerator.prepare({PREPARED})\n")),
        ("scheduler not prepared", prepare(unpacked="model, optimizer, dataloader, validation_loader",
                                           passed="model, optimizer, dataloader, validation_loader")),
        ("cpu not passed", prepare(arguments="device_placement=True")),
        ("the slides' four objects: the validation loader not prepared", prepare(
            unpacked="model, optimizer, dataloader, lr_scheduler", passed="model, optimizer, dataloader, lr_scheduler")),
        ("device_placement=False", prepare(arguments="device_placement=False, cpu=cpu")),
        ("prepared in one order, unpacked in another", prepare(
            passed="model, optimizer, dataloader, validation_loader, lr_scheduler")),
    ],
    "l2-train-one-epoch-accelerated": [
        ("loss.backward() instead of accelerator.backward(loss)", TRAIN_2.format(
            body=step_body(), recorded=GATHERED)),
        ("no zero_grad", TRAIN_2.format(body=step_body(zero="", backward="accelerator.backward(loss)"),
                                        recorded=GATHERED)),
        ("scheduler never steps", TRAIN_2.format(body=step_body(
            scheduler="", backward="accelerator.backward(loss)"), recorded=GATHERED)),
        ("the loss of this process only: loss.item()", TRAIN_2.format(
            body=step_body(backward="accelerator.backward(loss)"), recorded="loss.item()")),
    ],
    "l3-accumulation-step-due": [
        ("off by one: index % N == 0", STEP_DUE.format(expression="index % gradient_accumulation_steps == 0")),
        ("no step after a shorter last group", STEP_DUE.format(
            expression="(index + 1) % gradient_accumulation_steps == 0")),
        ("last group compared with num_batches", STEP_DUE.format(
            expression="(index + 1) % gradient_accumulation_steps == 0 or index == num_batches")),
        ("`and` instead of `or`", STEP_DUE.format(
            expression="(index + 1) % gradient_accumulation_steps == 0 and index + 1 == num_batches")),
        ("a step only at the end of the epoch", STEP_DUE.format(expression="index + 1 == num_batches")),
    ],
    "l3-num-training-steps": [
        ("schedule sized in batches", NUM_STEPS.format(expression="num_batches * epochs")),
        ("floor division drops the last group", NUM_STEPS.format(
            expression="num_batches // gradient_accumulation_steps * epochs")),
        ("one epoch only", NUM_STEPS.format(expression="math.ceil(num_batches / gradient_accumulation_steps)")),
        ("rounded up over the whole run, not per epoch", NUM_STEPS.format(
            expression="math.ceil(num_batches * epochs / gradient_accumulation_steps)")),
    ],
    "l3-train-one-epoch-accumulating": [
        ("loss not divided", TRAIN_3.format(body=GOOD_STEP + STEP_DUE_INLINE + "            optimizer.step()\n"
                                            "            lr_scheduler.step()\n            optimizer.zero_grad()\n")),
        ("zero_grad every batch", TRAIN_3.format(
            body="        optimizer.zero_grad()\n        loss = loss * len(batch['labels']) / "
                 "examples_in_group[index // gradient_accumulation_steps]\n" + GOOD_STEP +
                 STEP_DUE_INLINE + "            optimizer.step()\n            lr_scheduler.step()\n")),
        ("off by one: step on index % N == 0", TRAIN_3.format(
            body="        loss = loss * len(batch['labels']) / examples_in_group[index // gradient_accumulation_steps]\n"
                 + GOOD_STEP + "        if index % gradient_accumulation_steps == 0:\n"
                 "            optimizer.step()\n            lr_scheduler.step()\n            optimizer.zero_grad()\n")),
        ("the scaled losses returned", TRAIN_3.format(
            body="        losses[-1] = losses[-1] * len(batch['labels']) / "
                 "examples_in_group[index // gradient_accumulation_steps]\n"
                 "        loss = loss * len(batch['labels']) / examples_in_group[index // gradient_accumulation_steps]\n"
                 + GOOD_STEP + STEP_DUE_INLINE + "            optimizer.step()\n            lr_scheduler.step()\n"
                 "            optimizer.zero_grad()\n")),
        ("divided by N, wrong for a shorter last group", TRAIN_3.format(
            body="        loss = loss / gradient_accumulation_steps\n" + GOOD_STEP +
                 STEP_DUE_INLINE + "            optimizer.step()\n            lr_scheduler.step()\n"
                 "            optimizer.zero_grad()\n")),
    ],
    "l3-train-with-accelerator-accumulating": [
        ("no accelerator.accumulate", accelerate_3(
            body="        loss = model(**batch).loss\n        accelerator.backward(loss)\n"
                 "        if accelerator.sync_gradients:\n            stepped_after.append(index)\n"
                 "        optimizer.step()\n        lr_scheduler.step()\n        optimizer.zero_grad()\n")),
        ("loss divided by N again", accelerate_3(loss="loss / gradient_accumulation_steps")),
        ("Accelerator without gradient_accumulation_steps", accelerate_3(arguments="device_placement=True")),
        ("steps counted by hand: no step after a shorter last group", accelerate_3(
            noted="            if (index + 1) % gradient_accumulation_steps == 0:\n"
                  "                stepped_after.append(index)\n")),
        ("every batch noted as a step", accelerate_3(noted="            stepped_after.append(index)\n")),
        ("noted when sync_gradients is False", accelerate_3(noted=NOTED.replace("if accelerator", "if not accelerator"))),
        ("only the losses returned", accelerate_3(returned="losses")),
    ],
    "l3-train-with-clipping": [
        ("clipped after every micro-batch", clip_3(
            after="            accelerator.clip_grad_norm_(model.parameters(), max_norm)\n")),
        ("clipped when sync_gradients is False", clip_3(
            after=CLIP_IF_SYNC.replace("if accelerator", "if not accelerator"))),
        ("torch.nn.utils.clip_grad_norm_ instead of accelerator.clip_grad_norm_", clip_3(
            after=CLIP_IF_SYNC.replace("accelerator.clip_grad_norm_", "torch.nn.utils.clip_grad_norm_"))),
        ("max_norm fixed to 1.0", clip_3(after=CLIP_IF_SYNC.replace("max_norm)", "1.0)"))),
        ("clipped after optimizer.step()", clip_3(after="", stepped=CLIP_IF_SYNC)),
        ("clipped before backward", clip_3(before=CLIP_IF_SYNC, after="")),
    ],
    "l4-compute-metrics": [
        ("macro F1", METRICS.format(predictions="np.argmax(logits, axis=-1)",
                                    accuracy="float(accuracy_score(labels, predictions))",
                                    f1="float(f1_score(labels, predictions, average='macro'))")),
        ("argmax over the examples", METRICS.format(predictions="np.argmax(logits, axis=0)",
                                                    accuracy="float(accuracy_score(labels, predictions))",
                                                    f1="float(f1_score(labels, predictions))")),
        ("correct predictions counted, not a fraction", METRICS.format(
            predictions="np.argmax(logits, axis=-1)", accuracy="int((predictions == labels).sum())",
            f1="float(f1_score(labels, predictions))")),
        ("the F1 of class 0", METRICS.format(predictions="np.argmax(logits, axis=-1)",
                                             accuracy="float(accuracy_score(labels, predictions))",
                                             f1="float(f1_score(labels, predictions, pos_label=0))")),
        ("class 1 when its score is above 0, not above the other's", METRICS.format(
            predictions="(logits[:, 1] > 0).astype(int)", accuracy="float(accuracy_score(labels, predictions))",
            f1="float(f1_score(labels, predictions))")),
    ],
    "l4-make-training-args": [
        ("evaluation_strategy (gone in transformers 5)", args_4(
            f"evaluation_strategy='epoch', {GA_4}, {MICRO}, {GOOD_ARGS}")),
        ("no evaluation every epoch", args_4(f"{GA_4}, {MICRO}, {GOOD_ARGS}")),
        ("no accumulation: the effective batch as one batch", args_4(
            f"eval_strategy='epoch', per_device_train_batch_size=effective_batch, {GOOD_ARGS}")),
        ("the slide's 2 accumulation steps copied", args_4(
            f"eval_strategy='epoch', gradient_accumulation_steps=2, {MICRO}, {GOOD_ARGS}")),
        ("a float: / instead of //", args_4(
            f"eval_strategy='epoch', gradient_accumulation_steps=effective_batch / batch_size, {MICRO}, {GOOD_ARGS}")),
        ("an effective batch that batch_size does not divide, rounded down", args_4(
            f"eval_strategy='epoch', {GA_4}, {MICRO}, {GOOD_ARGS}", check="")),
    ],
    "l5-checkpointed-forward": [
        ("no checkpoint: every activation kept", CHECKPOINTED.format(
            body="    for layer in layers:\n        hidden = layer(hidden)\n    return hidden\n")),
        ("use_reentrant=True: the weights get no gradient", CHECKPOINTED.format(
            body=CHECKPOINT_EACH.replace("use_reentrant=False", "use_reentrant=True").format(extra=""))),
        ("every layer gets the input, not the previous output", CHECKPOINTED.format(
            body="    for layer in layers:\n        output = checkpoint(layer, hidden, use_reentrant=False)\n"
                 "    return output\n")),
        ("one checkpoint around the whole stack", CHECKPOINTED.format(
            body="    def all_layers(hidden):\n        for layer in layers:\n            hidden = layer(hidden)\n"
                 "        return hidden\n    return checkpoint(all_layers, hidden, use_reentrant=False)\n")),
        ("preserve_rng_state=False: dropout not replayed", CHECKPOINTED.format(
            body=CHECKPOINT_EACH.format(extra=", preserve_rng_state=False"))),
    ],
    "l5-compare-gradients": [
        ("no manual_seed: dropout differs", COMPARE.format(body=ZERO + SWITCH, result=LARGEST)),
        ("no zero_grad: the second pass adds to the first", COMPARE.format(body=SWITCH + SEED, result=LARGEST)),
        ("checkpointing never switched on", COMPARE.format(body=ZERO + SEED, result=LARGEST)),
        ("checkpointing switched on, never off", COMPARE.format(
            body=ZERO + "        if enabled:\n            model.activation_checkpointing_enable()\n" + SEED,
            result=LARGEST)),
        ("no abs: the largest signed difference", COMPARE.format(
            body=ZERO + SWITCH + SEED, result="max((a - b).max().item() for a, b in zip(*grads))")),
        ("the mean difference, not the largest", COMPARE.format(
            body=ZERO + SWITCH + SEED, result="max((a - b).abs().mean().item() for a, b in zip(*grads))")),
        ("the seed argument ignored", COMPARE.format(
            body=ZERO + SWITCH + SEED.replace("seed", "0").replace("manual_0", "manual_seed"), result=LARGEST)),
    ],
    "l5-make-training-args": [
        ("the old name gradient_checkpointing", ARGS_5.format(
            output_dir="output_dir", arguments=f"{GOOD_ARGS_5}, gradient_checkpointing=True")),
        ("checkpointing not switched on", ARGS_5.format(output_dir="output_dir", arguments=GOOD_ARGS_5)),
        ("fixed numbers instead of the arguments", ARGS_5.format(
            output_dir="output_dir",
            arguments="per_device_train_batch_size=8, num_train_epochs=2, activation_checkpointing=True")),
        ("a fixed output_dir", ARGS_5.format(
            output_dir="'results'", arguments=f"{GOOD_ARGS_5}, activation_checkpointing=True")),
        ("batch_size and epochs swapped", ARGS_5.format(
            output_dir="output_dir",
            arguments="per_device_train_batch_size=epochs, num_train_epochs=batch_size, activation_checkpointing=True")),
    ],
    "l6-count-synchronisations": [
        ("the average at the end not counted", SYNCS.format(expression="optimizer_steps // local_sgd_steps")),
        ("rounded up", SYNCS.format(expression="math.ceil(optimizer_steps / local_sgd_steps) + 1")),
        ("a float, not an int", SYNCS.format(expression="optimizer_steps / local_sgd_steps + 1")),
        ("round instead of //", SYNCS.format(expression="round(optimizer_steps / local_sgd_steps) + 1")),
        ("no average at the end when K divides the steps", SYNCS.format(
            expression="optimizer_steps // local_sgd_steps + (optimizer_steps % local_sgd_steps != 0)")),
    ],
    "l6-train-one-epoch-local-sgd": [
        ("local_sgd.step() never called", LOCAL_SGD.format(k="local_sgd_steps", early="", sync=""), [K1]),
        ("K fixed to 1", LOCAL_SGD.format(k="1", early="", sync=SYNC)),
        ("no LocalSGD: plain data-parallel training", TRAIN_2.format(body=step_body(
            backward="accelerator.backward(loss)"), recorded="loss.item()").replace(
            "def train_one_epoch_accelerated(accelerator, model, optimizer, dataloader, lr_scheduler):",
            "def train_one_epoch_local_sgd(accelerator, model, optimizer, dataloader, lr_scheduler, local_sgd_steps):"),
         [K1]),
        ("K fixed to 2", LOCAL_SGD.format(k="2", early="", sync=SYNC), [K1]),
        ("local_sgd.step() before optimizer.step()", LOCAL_SGD.format(
            k="local_sgd_steps", early=SYNC, sync=""), [K1]),
        ("local_sgd.step() once, after the loop", LOCAL_SGD.format(k="local_sgd_steps", early="", sync="").replace(
            "            losses.append(loss.item())\n", "            losses.append(loss.item())\n        local_sgd.step()\n"),
         [K1]),
    ],
    "l7-mixed-precision-step": [
        ("the model converted to bfloat16", MIXED.format(
            body="    model.to(dtype)\n    loss = model(**batch).loss\n" + SCALED)),
        ("backward and step without the scaler", MIXED.format(
            body=AUTOCAST + "    loss.backward()\n    optimizer.step()\n    optimizer.zero_grad()\n")),
        ("the forward pass outside autocast", MIXED.format(body="    loss = model(**batch).loss\n" + SCALED)),
        ("the scaled loss returned", MIXED.format(
            body=AUTOCAST + "    loss = scaler.scale(loss)\n    loss.backward()\n    scaler.step(optimizer)\n"
                            "    scaler.update()\n    optimizer.zero_grad()\n")),
        ("autocast for a fixed 'cpu', not device_type", MIXED.format(
            body=AUTOCAST.replace("device_type,", "'cpu',") + SCALED)),
        ("scaler.update() before scaler.step()", MIXED.format(
            body=AUTOCAST + "    scaler.scale(loss).backward()\n    scaler.update()\n    scaler.step(optimizer)\n"
                            "    optimizer.zero_grad()\n")),
        ("optimizer.step() on the scaled gradients", MIXED.format(
            body=AUTOCAST + "    scaler.scale(loss).backward()\n    optimizer.step()\n    scaler.update()\n"
                            "    optimizer.zero_grad()\n")),
    ],
    "l7-clipped-mixed-precision-step": [
        ("clipped before scaler.unscale_", CLIPPED_7.format(body=CLIP + UNSCALE + STEP)),
        ("no scaler.unscale_: the scaled gradients clipped", CLIPPED_7.format(body=CLIP + STEP)),
        ("clipped after scaler.step", CLIPPED_7.format(body=UNSCALE + STEP + CLIP)),
        ("optimizer.step() after unscale_, not scaler.step", CLIPPED_7.format(
            body=UNSCALE + CLIP + "    optimizer.step()\n")),
        ("unscale_ after scaler.step", CLIPPED_7.format(body=CLIP + STEP + UNSCALE)),
        ("max_norm fixed to 1.0", CLIPPED_7.format(body=UNSCALE + CLIP.replace("max_norm)", "1.0)") + STEP)),
        ("clipped only when the scaler is on", CLIPPED_7.format(
            body="    if scaler.is_enabled():\n        scaler.unscale_(optimizer)\n"
                 "        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)\n" + STEP)),
    ],
    "l7-make-training-args": [
        ("fp16 instead of bf16", ARGS_7.format(arguments="fp16=True, use_cpu=use_cpu")),
        ("use_cpu not passed", ARGS_7.format(arguments="bf16=True")),
        ("no mixed precision", ARGS_7.format(arguments="use_cpu=use_cpu")),
        ("use_cpu=True written in", ARGS_7.format(arguments="bf16=True, use_cpu=True")),
        ("both bf16 and fp16", ARGS_7.format(arguments="bf16=True, fp16=True, use_cpu=use_cpu")),
    ],
    "l8-optimizer-state-bytes": [
        ("numbers counted, not bytes", STATE.format(expression=f"sum(v.numel() {TENSORS})")),
        ("the weights counted, not the state", STATE.format(
            expression="sum(p.numel() * p.element_size() for group in optimizer.param_groups for p in group['params'])")),
        ("4 bytes per number, whatever the dtype", STATE.format(expression=f"sum(v.numel() * 4 {TENSORS})")),
        ("the state of the first parameter only", STATE.format(
            expression="sum(v.numel() * v.element_size() for v in next(iter(optimizer.state.values())).values() "
                       "if isinstance(v, torch.Tensor))")),
        ("values that are not tensors counted too", STATE.format(
            expression="sum(v.numel() * v.element_size() for state in optimizer.state.values() for v in state.values())")),
        ("two moments per weight, by the parameters", STATE.format(
            expression="sum(2 * p.numel() * p.element_size() for group in optimizer.param_groups "
                       "for p in group['params'])")),
    ],
    "l8-adamw-state-bytes": [
        ("no step counter", ADAMW.format(
            expression="sum(2 * p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)")),
        ("one moment", ADAMW.format(
            expression="sum(p.numel() * p.element_size() + 4 for p in model.parameters() if p.requires_grad)")),
        ("frozen parameters counted", ADAMW.format(
            expression="sum(2 * p.numel() * p.element_size() + 4 for p in model.parameters())")),
        ("4 bytes per number, whatever the dtype", ADAMW.format(
            expression="sum(2 * p.numel() * 4 + 4 for p in model.parameters() if p.requires_grad)")),
        ("an 8-byte step counter", ADAMW.format(
            expression="sum(2 * p.numel() * p.element_size() + 8 for p in model.parameters() if p.requires_grad)")),
    ],
    "l9-resume-point": [
        ("the order swapped", POINT.format(
            expression="completed_steps % batches_per_epoch, completed_steps // batches_per_epoch")),
        ("epochs counted from 1", POINT.format(
            expression="completed_steps // batches_per_epoch + 1, completed_steps % batches_per_epoch")),
        ("all steps, not those of the epoch", POINT.format(
            expression="completed_steps // batches_per_epoch, completed_steps")),
        ("round instead of //", POINT.format(
            expression="(epoch := round(completed_steps / batches_per_epoch)), "
                       "completed_steps - epoch * batches_per_epoch")),
        ("the step under way counted: (completed_steps + 1) // batches_per_epoch", POINT.format(
            expression="(completed_steps + 1) // batches_per_epoch, completed_steps % batches_per_epoch")),
        ("the epoch under way as ceil - 1: epoch 0 at an epoch's end", "import math\n\n" + POINT.format(
            expression="max(math.ceil(completed_steps / batches_per_epoch) - 1, 0), "
                       "completed_steps % batches_per_epoch")),
    ],
    "l9-resume-training": [
        ("no skip_first_batches: the epoch's first batches trained twice", resume(batches="dataloader")),
        ("skip_first_batches in every epoch", resume(batches=SKIP)),
        ("the checkpoint never loaded", resume(load="")),
        ("progress.completed_steps not counted", resume(count="")),
        ("every epoch from 0", resume(epochs="epochs")),
        ("no set_epoch: the resumed epochs in another order", resume(set_epoch="")),
    ],
    "l10-zero-bytes-per-process": [
        ("the stage ignored: every part sharded", zero_bytes(sharded="('optimizer_state', 'gradients', 'parameters')")),
        ("one stage early: stage 1 shards the gradients too", zero_bytes(
            sharded="('optimizer_state', 'gradients', 'parameters')[:stage + 1] if stage else ()")),
        ("stage 1 shards the parameters first", zero_bytes(sharded="('parameters', 'gradients', 'optimizer_state')[:stage]")),
        ("stage 3 leaves the parameters whole", zero_bytes(
            sharded="('optimizer_state', 'gradients', 'parameters')[:min(stage, 2)]")),
        ("numbers, not bytes", zero_bytes(number="1", state="2")),
        ("one moment: 4 bytes of optimizer state per parameter", zero_bytes(state="4")),
        ("a float: / instead of //", zero_bytes(divided="size / num_processes")),
    ],
    "l10-local-bytes": [
        ("numel() of a DTensor: the whole parameter", local_bytes(piece="pass")),
        ("numbers, not bytes", local_bytes(size="tensor.numel()")),
        ("None not skipped", local_bytes(skip="")),
        ("the whole divided by the number of processes", local_bytes(
            piece="share = torch.distributed.get_world_size() if isinstance(tensor, DTensor) else 1",
            size="tensor.numel() // share * tensor.element_size()")),
        ("4 bytes per number, whatever the dtype", local_bytes(size="tensor.numel() * 4")),
        ("plain tensors skipped", local_bytes(skip=SKIP_NONE + "        if not isinstance(tensor, DTensor):\n"
                                                          "            continue\n")),
        ("to_local() on every tensor", local_bytes(piece="tensor = tensor.to_local()")),
        ("two passes over a generator: plain tensors, then DTensors", TWO_PASSES.format(first=PLAIN, second=PIECES)),
        ("two passes over a generator: DTensors, then plain tensors", TWO_PASSES.format(first=PIECES, second=PLAIN)),
    ],
}
# The table's Validate column: the mistakes that pass every visible test (Validate says "Success!") and lose
# their points only at grading, where hidden tests try other values. Few: a student who passes Validate
# should have understood (at most 5 % of the mistakes).
GRADING_ONLY = frozenset({  # (exercise, mistake name)
})


def grading_cell_of(exercise):
    return re.sub(r"^(l\d+)-", r"\1-test-", exercise)


def catchers(exercise, mistake):
    """The test cells that must fail for `mistake` in `exercise`: its own, and any it names."""
    return [grading_cell_of(exercise), *(mistake[2] if len(mistake) > 2 else [])]


def of(lesson):
    """[(exercise, name, mistaken source, test cells that must catch it)] of `lesson`, in table order."""
    prefix = f"l{int(lesson[:2])}-"
    return [(exercise, mistake[0], mistake[1], catchers(exercise, mistake))
            for exercise, mistakes in MISTAKES.items() if exercise.startswith(prefix) for mistake in mistakes]
