"""Generated terrains: typed configs, the generator, the height field they become in the
model, and the ground heights on the torch side."""

from robolearn.terrain.config import TYPES, SubTerrainCfg, TerrainCfg, default_sub_terrains
from robolearn.terrain.generator import TerrainGrid, generate
from robolearn.terrain.heightmap import HeightMap
from robolearn.terrain.mjcf import TERRAIN_GEOM, add_terrain

__all__ = [
    "TERRAIN_GEOM",
    "TYPES",
    "HeightMap",
    "SubTerrainCfg",
    "TerrainCfg",
    "TerrainGrid",
    "add_terrain",
    "default_sub_terrains",
    "generate",
]
