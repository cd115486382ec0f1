"""runtime.devices"""
