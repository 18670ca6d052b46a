"""Small made-up measurements in the shape of each lesson's rows: the plots and tables of
test_plots.py and test_numbers.py draw and print them."""
import torch

CHECKPOINTING = [{"batch_size": size, "device": "cpu", "tokens": 128, "peak_mib": 10.0 * size,
                  "peak_mib_checkpointed": 6.0 * size, "seconds": 0.01 * size, "seconds_checkpointed": 0.013 * size,
                  "time_ratio": 1.3, "time_ratio_low": 1.2, "time_ratio_high": 1.4} for size in (8, 16)]
LOCAL_SGD = [{"local_sgd_steps": k, "optimizer_steps": 4, "synchronisations": syncs, "bytes_sent": syncs * 1e6,
              "loss": [0.7, 0.6, 0.5, 0.4], "seconds": 2.0, "average_after_steps": averages, "processes": 2}
             for k, syncs, averages in ((None, 4, []), (2, 3, [2, 4, 4]))]
PRECISION = [{"precision": name, "device": "cpu", "seconds": 0.1 * ratio, "time_ratio": ratio,
              "time_ratio_low": ratio - 0.1, "time_ratio_high": ratio + 0.1, "peak_mib": 100 / ratio}
             for name, ratio in (("float32", 1.0), ("bfloat16", 2.0))]
OPTIMIZERS = [{"optimizer": name, "device": "cpu", "state_bytes": size, "bytes_per_parameter": size / 1e6,
               "final_loss": 0.5, "seconds": 3.0, "loss": [0.7, 0.5]} for name, size in (("adamw", 8e6), ("adafactor", 1e5))]
RESUME = [{"run": run, "optimizer_steps": 3, "loss": [0.7, 0.6, 0.5], "max_weight_difference": difference}
          for run, difference in (("uninterrupted", 0.0), ("resumed", 0.0),
                                  ("resumed without skip_first_batches", 0.01))]
CHECKPOINT = {"model.safetensors": 1_500_000, "optimizer.bin": 3_000_000, "random_states_0.pkl": 15_000}
SHARDING = [{"mode": mode, "processes": 2, "num_parameters": 1000, "loss": [0.7, 0.6], "seconds": 1.0,
             "bytes": {"parameters": [4000 // share] * 2, "gradients": [4000 // share] * 2,
                       "optimizer_state": [8000 // share + 8] * 2},
             "calls_per_step": {"all-reduce": 2.0 - share, "all-gather": 3.0 * (share - 1), "reduce-scatter": share - 1.0},
             "bytes_per_step": {"all-reduce": 4000.0 * (2 - share), "all-gather": 7000.0 * (share - 1),
                                "reduce-scatter": 4000.0 * (share - 1)}}
            for mode, share in (("data parallel", 1), ("fully sharded", 2))]

STEP_EVENTS = [("all-gather", ""), ("forward", ""), ("all-gather", "layer"), ("forward", "layer"), ("free", "layer"),
               ("all-gather", "layer"), ("backward", "layer"), ("free", "layer"), ("reduce-scatter", "layer"),
               ("backward", ""), ("free", ""), ("reduce-scatter", "")]
PADDING = ({"to max_length": 0.5, "dynamic padding": 0.06}, {"to max_length": [1.0, 1.1], "dynamic padding": [0.5, 0.6]})
PADDED_EPOCHS = {"to max_length": [{"attention_mask": torch.tensor([[1, 1, 0, 0], [1, 0, 0, 0]])}],
                 "dynamic padding": [{"attention_mask": torch.tensor([[1, 1], [1, 0]])}, {"attention_mask": torch.ones(1, 3)}]}
