"""AutoTVM's tuners: grid, random, genetic and XGBoost-model-based search of a config space."""

from .ga import GATuner
from .grid import GridSearchTuner, RandomTuner
from .tuner import Tuner
from .xgb import XGBTuner

__all__ = ["GATuner", "GridSearchTuner", "RandomTuner", "Tuner", "XGBTuner"]
